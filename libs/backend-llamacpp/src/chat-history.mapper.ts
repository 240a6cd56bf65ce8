import type { ChatHistoryItem, ChatModelFunctionCall, ChatModelResponse } from 'node-llama-cpp';
import { GatewayError, type ChatMessageContent } from '@mgw/contracts';
import type { ChatInferenceRequest, ResponseFormat } from '@mgw/inference';

function textOf(content: ChatMessageContent | null, index: number, model: string): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  if (content.some((part) => part.type === 'image_url')) {
    throw GatewayError.invalidRequest(
      `The model \`${model}\` accepts text only; messages[${index}].content has an image part.`,
      `messages[${index}].content`,
      'unsupported_content',
    );
  }
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/**
 * Arguments or a result as JSON when they parse, so the wrapper renders them as the JSON they are rather
 * than as an escaped string; else the raw string.
 */
function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Our messages in node-llama-cpp's chat history form, ending with the model turn the answer fills. The
 * chat wrapper (from the GGUF's template) renders it. 'developer' is the newer name of 'system'. A
 * text-only model refuses image parts instead of silently answering a question it never saw.
 *
 * Tool calling: an assistant turn's `tool_calls` become function-call items of its model response, and
 * each `tool` message fills the `result` of the call it answers, so the wrapper renders calls and results
 * in the model's own function-calling syntax. An assistant message that follows tool results continues
 * that same model response, as node-llama-cpp models a tool loop; when the conversation ends with tool
 * results, the answer continues that response too.
 */
export function toChatHistory(messages: ChatInferenceRequest['messages'], model: string): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  const calls = new Map<string, ChatModelFunctionCall>();
  /** The model response that ends with function calls, which the next assistant text continues. */
  let open: ChatModelResponse | null = null;

  messages.forEach((message, index) => {
    switch (message.role) {
      case 'system':
      case 'developer':
        history.push({ type: 'system', text: textOf(message.content, index, model) });
        open = null;
        return;
      case 'user':
        history.push({ type: 'user', text: textOf(message.content, index, model) });
        open = null;
        return;
      case 'assistant': {
        const text = textOf(message.content, index, model);
        const response: ChatModelResponse = open ?? { type: 'model', response: [] };
        if (open === null) history.push(response);
        if (text !== '' || (message.toolCalls ?? []).length === 0) response.response.push(text);
        for (const call of message.toolCalls ?? []) {
          const item: ChatModelFunctionCall = {
            type: 'functionCall',
            name: call.function.name,
            params: jsonOrText(call.function.arguments),
            result: undefined,
          };
          response.response.push(item);
          calls.set(call.id, item);
        }
        open = (message.toolCalls ?? []).length > 0 ? response : null;
        return;
      }
      case 'tool': {
        const call = calls.get(message.toolCallId);
        if (call === undefined) {
          throw GatewayError.invalidRequest(
            `messages[${index}].tool_call_id "${message.toolCallId}" answers no tool call of an earlier assistant message.`,
            `messages[${index}].tool_call_id`,
          );
        }
        call.result = jsonOrText(textOf(message.content, index, model));
        return;
      }
    }
  });
  const last = history.at(-1);
  if (last === undefined || last !== open) history.push({ type: 'model', response: [] });
  return history;
}

/**
 * Tells the model the JSON a grammar is about to hold it to. The grammar alone guarantees the shape, but
 * a model that knows the schema fills it with sensible values instead of guessing the fields' meaning;
 * and a schema in the prompt counts as prompt tokens, as OpenAI counts it. Added to the first system
 * message (or as one), since templates differ in where they accept system text.
 */
export function withResponseFormat(history: ChatHistoryItem[], format: ResponseFormat): ChatHistoryItem[] {
  if (format.type === 'text') return history;
  const instruction =
    format.type === 'json_object'
      ? 'Respond with a JSON object.'
      : `Respond with JSON that follows this JSON Schema (${format.name}${format.description !== undefined ? `: ${format.description}` : ''}):\n${JSON.stringify(format.schema)}`;
  const [first, ...rest] = history;
  if (first?.type === 'system' && typeof first.text === 'string') {
    return [{ type: 'system', text: `${first.text}\n\n${instruction}` }, ...rest];
  }
  return [{ type: 'system', text: instruction }, ...history];
}
