import { GatewayError, type ChatContentPart, type RequestSizeLimits } from '@mgw/contracts';
import {
  ANY_OBJECT,
  chatRequestProblem,
  NO_PARAMETERS,
  ParamOrigins,
  type ChatRequest,
  type InferenceMessage,
  type ResponseFormat,
  type ToolChoice,
  type ToolDefinition,
} from '@mgw/request';
import { responsesPartName } from './responses-part.name';
import type {
  ConversationItem,
  FunctionTool,
  InputContentPart,
  ResponsesRequest,
  ResponseToolChoice,
  TextFormat,
} from './responses.types';

function textOf(content: string | InputContentPart[]): string {
  if (typeof content === 'string') return content;
  let text = '';
  for (const part of content) {
    if (part.type === 'input_text' || part.type === 'output_text') text += part.text;
    else if (part.type === 'refusal') text += part.refusal;
  }
  return text;
}

function partsOf(content: string | InputContentPart[]): string | ChatContentPart[] {
  if (typeof content === 'string') return content;
  if (!content.some((part) => part.type === 'input_image')) return textOf(content);
  return content.map((part): ChatContentPart => {
    switch (part.type) {
      case 'input_image':
        return {
          type: 'image_url',
          image_url: { url: part.image_url ?? '', ...(part.detail !== undefined && { detail: part.detail }) },
        };
      case 'refusal':
        return { type: 'text', text: part.refusal };
      default:
        return { type: 'text', text: part.text };
    }
  });
}

/**
 * The conversation as neutral messages: `developer` speaks as `system`, consecutive `function_call` items
 * become one assistant message's `tool_calls` (joined to the assistant text before them), each
 * `function_call_output` a `tool` message. As OpenAI does, a call without its output and an output for a
 * call never made are refused.
 */
export function toChatMessages(
  instructions: string | null,
  items: readonly ConversationItem[],
  origins?: number[],
): InferenceMessage[] {
  const messages: InferenceMessage[] = [];
  if (instructions !== null && instructions !== '') messages.push({ role: 'system', content: instructions });
  const calls = new Set<string>();
  const answered = new Set<string>();
  for (let at = 0; at < items.length; at++) {
    const item = items[at]!;
    switch (item.type) {
      case 'message': {
        const role = item.role === 'developer' ? 'system' : item.role;
        const content = role === 'user' ? partsOf(item.content) : textOf(item.content);
        // Where each chat message with content parts came from, to name its parts (`responsesPartName`).
        if (origins !== undefined) origins[messages.length] = at;
        messages.push({ role, content });
        break;
      }
      case 'function_call': {
        calls.add(item.call_id);
        const call = {
          id: item.call_id,
          type: 'function' as const,
          function: { name: item.name, arguments: item.arguments },
        };
        const last = messages.at(-1);
        if (last?.role === 'assistant') (last.toolCalls ??= []).push(call);
        else messages.push({ role: 'assistant', content: null, toolCalls: [call] });
        break;
      }
      case 'function_call_output':
        if (!calls.has(item.call_id)) {
          throw GatewayError.invalidRequest(
            `No tool call found for function call output with call_id ${item.call_id}.`,
            'input',
          );
        }
        answered.add(item.call_id);
        messages.push({ role: 'tool', toolCallId: item.call_id, content: textOf(item.output) });
        break;
    }
  }
  for (const call of calls) {
    if (!answered.has(call)) {
      throw GatewayError.invalidRequest(`No tool output found for function call ${call}.`, 'input');
    }
  }
  return messages;
}

/** Draft-07 and later schemas name their dialect; a model needs only the schema itself. */
function withoutDialect(
  schema: Record<string, unknown> | null | undefined,
): Record<string, unknown> | undefined {
  if (schema === null || schema === undefined) return undefined;
  if (!('$schema' in schema)) return schema;
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

function toolOf(tool: FunctionTool): ToolDefinition {
  return {
    name: tool.name,
    ...(tool.description !== undefined && tool.description !== null && { description: tool.description }),
    parameters: withoutDialect(tool.parameters) ?? NO_PARAMETERS,
    strict: tool.strict ?? false,
  };
}

function toolChoiceOf(choice: ResponseToolChoice): ToolChoice {
  if (typeof choice === 'string') return { type: choice };
  if (choice.type === 'function' && typeof choice.name === 'string')
    return { type: 'function', name: choice.name };
  // A hosted tool or an allowed-tools list: the model chooses among the tools it sees.
  return { type: 'auto' };
}

function formatOf(format: TextFormat): ResponseFormat {
  if (format.type !== 'json_schema') return { type: format.type };
  const { name, schema, description, strict } = format;
  return {
    type: 'json_schema',
    name,
    schema: withoutDialect(schema) ?? ANY_OBJECT,
    strict: strict ?? false,
    ...(description !== undefined && { description }),
  };
}

/**
 * Where any Responses request's parts came from: its conversation is `input` (the chat message's index
 * is not the item's: instructions and stored turns come first), its tools `tools`, its format
 * `text.format`. Also the origins of a stream resumed from its replies alone, whose request is not known.
 */
export const RESPONSES_ORIGINS = new ParamOrigins()
  .set('messages', 'input', 'drop')
  .set('tools', 'tools', 'drop')
  .set('response_format.json_schema', 'text.format')
  .set('response_format', 'text.format')
  .set('max_completion_tokens', 'max_output_tokens')
  .set('max_tokens', 'max_output_tokens');

/**
 * Where this request's parts came from, past `RESPONSES_ORIGINS`: each function tool's place among the
 * request's tools (hosted ones are left out of the model's), and each image part's item.
 */
function originsOf(
  request: ResponsesRequest,
  messages: readonly InferenceMessage[],
  historyLength: number,
  sources: readonly number[],
): ParamOrigins {
  const origins = new ParamOrigins(RESPONSES_ORIGINS);
  request.tools.forEach(({ param }, index) => {
    origins.set(`tools[${index}].function`, param).set(`tools[${index}]`, param);
  });
  const name = responsesPartName(request, historyLength, sources);
  messages.forEach(({ content }, m) => {
    if (!Array.isArray(content)) return;
    content.forEach((part, p) => {
      if (part.type === 'image_url')
        origins.set(`messages[${m}].content[${p}].image_url.url`, name(m, p), 'drop');
    });
  });
  return origins;
}

/**
 * A Responses request as the neutral chat request, and where its parts came from: its conversation
 * (instructions, the stored turns of `previous_response_id`, its own input with references resolved) as
 * messages, its function tools and text format. The assembled conversation keeps the chat request's
 * bounds (`chatRequestProblem`), refused in the Responses request's words.
 */
export function toChatRequest(
  request: ResponsesRequest,
  history: readonly ConversationItem[],
  input: readonly ConversationItem[],
  limits: Readonly<RequestSizeLimits>,
): { request: ChatRequest; origins: ParamOrigins } {
  const sources: number[] = [];
  const messages = toChatMessages(request.instructions, [...history, ...input], sources);
  if (messages.length === 0) {
    throw GatewayError.invalidRequest(
      "Invalid 'input': the conversation has no message for the model.",
      'input',
    );
  }
  const tools = request.tools.map(({ tool }) => toolOf(tool));
  const { user, prompt_cache_key } = request.passThrough;
  const chat: ChatRequest = {
    messages,
    n: 1,
    maxTokens: request.maxOutputTokens,
    stop: [],
    temperature: request.temperature ?? 1,
    topP: request.topP ?? 1,
    presencePenalty: 0,
    frequencyPenalty: 0,
    seed: null,
    user: user ?? null,
    tools,
    toolChoice: tools.length > 0 ? toolChoiceOf(request.toolChoice) : { type: 'none' },
    parallelToolCalls: tools.length > 0 ? request.parallelToolCalls : true,
    responseFormat: formatOf(request.textFormat),
    logprobs: false,
    topLogprobs: 0,
  };
  if (prompt_cache_key !== undefined) chat.promptCacheKey = prompt_cache_key;
  const origins = originsOf(request, messages, history.length, sources);
  const problem = chatRequestProblem(chat, limits);
  if (problem !== null) throw origins.told(GatewayError.invalidRequest(problem.message, problem.param));
  if (request.textFormat.type === 'json_schema') {
    const typeProblem = schemaTypeProblem(request.textFormat.schema);
    if (typeProblem !== null) {
      throw GatewayError.invalidRequest(
        `Invalid schema for response_format '${request.textFormat.name}': ${typeProblem}`,
        'text.format.schema',
        'invalid_json_schema',
      );
    }
  }
  return { request: chat, origins };
}

const JSON_TYPES: ReadonlySet<unknown> = new Set([
  'object',
  'array',
  'string',
  'number',
  'integer',
  'boolean',
  'null',
]);

/**
 * A `type` keyword that names no JSON type, anywhere in a schema (already bounded in size and depth by the
 * chat request's rules): a schema no model output could be checked against.
 */
function schemaTypeProblem(schema: Record<string, unknown>): string | null {
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    if (Array.isArray(node)) {
      stack.push(...(node as unknown[]));
      continue;
    }
    for (const [key, value] of Object.entries(node)) {
      if (key === 'type' && (typeof value === 'string' || Array.isArray(value))) {
        const types = Array.isArray(value) ? (value as unknown[]) : [value];
        const bad = types.find((type) => !JSON_TYPES.has(type));
        if (bad !== undefined) return `${JSON.stringify(bad)} is not a JSON Schema type.`;
      } else if (typeof value === 'object' && value !== null) {
        stack.push(value);
      }
    }
  }
  return null;
}
