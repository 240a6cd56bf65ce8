import { ANY_OBJECT, NO_PARAMETERS, type ChatRequest, type InferenceMessage } from '@mgw/request';
import { estimateImageTokens } from './image-tokens.estimate';

/** Per message: role and framing tokens that every chat template adds. */
const PER_MESSAGE_TOKENS = 4;
const CHARS_PER_TOKEN = 4;
/** Per tool call or tool definition: the framing a chat template wraps around it. */
const PER_TOOL_TOKENS = 8;

const textTokens = (text: string): number => Math.ceil(text.length / CHARS_PER_TOKEN);

/**
 * A cheap upper-leaning guess of a chat prompt's tokens (about four characters each), for reserving
 * against a TPM limit before the real count is known. The worker replaces it with the actual usage.
 * Tool calls an assistant message echoes back count with their name and arguments; an image part by its
 * size (see `estimateImageTokens`).
 */
export function estimatePromptTokens(messages: readonly InferenceMessage[]): number {
  let tokens = 0;
  for (const message of messages) {
    tokens += PER_MESSAGE_TOKENS;
    const content: unknown = message.content;
    if (typeof content === 'string') tokens += textTokens(content);
    else if (Array.isArray(content)) {
      for (const part of content as Array<{
        type?: string;
        text?: string;
        image_url?: { url?: string; detail?: string };
      }>) {
        tokens +=
          part.type === 'text'
            ? textTokens(part.text ?? '')
            : estimateImageTokens(part.image_url?.url, part.image_url?.detail);
      }
    }
    const calls = message.role === 'assistant' ? message.toolCalls : undefined;
    if (calls !== undefined) {
      for (const call of calls) {
        tokens += PER_TOOL_TOKENS + textTokens(call.function.name) + textTokens(call.function.arguments);
      }
    }
  }
  return tokens;
}

/**
 * What the request's tool definitions and response schema add to the prompt: backends render them into it
 * (a chat template's tool section, a schema instruction or grammar), so they count against TPM like text.
 * Zero, without serializing anything, for a request that has neither.
 */
export function estimateToolAndSchemaTokens(request: ChatRequest): number {
  let tokens = 0;
  for (const { name, description, parameters } of request.tools) {
    tokens += PER_TOOL_TOKENS + textTokens(name);
    if (description !== undefined) tokens += textTokens(description);
    // The default of a function the client gave no parameters is not the client's text.
    if (parameters !== NO_PARAMETERS) tokens += textTokens(JSON.stringify(parameters));
  }
  const format = request.responseFormat;
  if (format.type === 'json_schema') {
    tokens += PER_TOOL_TOKENS + textTokens(format.name);
    if (format.description !== undefined) tokens += textTokens(format.description);
    if (format.schema !== ANY_OBJECT) tokens += textTokens(JSON.stringify(format.schema));
  }
  return tokens;
}

/** Prompt estimate (messages, tools, schema) plus the completion budget of every choice. */
export function estimateChatTokens(request: ChatRequest, defaultMaxTokens: number): number {
  const completion = request.maxTokens ?? defaultMaxTokens;
  return (
    estimatePromptTokens(request.messages) + estimateToolAndSchemaTokens(request) + completion * request.n
  );
}

/**
 * The same guess for an embedding request: its inputs' tokens (token arrays count exactly), nothing
 * generated. The worker records the real count.
 */
export function estimateEmbeddingTokens(inputs: readonly (string | number[])[]): number {
  let tokens = 0;
  for (const input of inputs) tokens += typeof input === 'string' ? textTokens(input) : input.length;
  return tokens;
}
