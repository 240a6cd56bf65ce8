import type { ChatCompletionRequestDto } from '@mgw/contracts';
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
export function estimatePromptTokens(messages: ChatCompletionRequestDto['messages']): number {
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
    const calls = message.tool_calls;
    if (calls != null) {
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
export function estimateToolAndSchemaTokens(request: ChatCompletionRequestDto): number {
  let tokens = 0;
  if (request.tools != null) {
    for (const tool of request.tools) {
      const { name, description, parameters } = tool.function;
      tokens += PER_TOOL_TOKENS + textTokens(name);
      if (typeof description === 'string') tokens += textTokens(description);
      if (parameters != null) tokens += textTokens(JSON.stringify(parameters));
    }
  }
  const schema = request.response_format?.json_schema;
  if (schema != null) {
    tokens += PER_TOOL_TOKENS + textTokens(schema.name);
    if (typeof schema.description === 'string') tokens += textTokens(schema.description);
    if (schema.schema != null) tokens += textTokens(JSON.stringify(schema.schema));
  }
  return tokens;
}

/** Prompt estimate (messages, tools, schema) plus the completion budget of every choice. */
export function estimateChatTokens(request: ChatCompletionRequestDto, defaultMaxTokens: number): number {
  const completion = request.max_completion_tokens ?? request.max_tokens ?? defaultMaxTokens;
  return (
    estimatePromptTokens(request.messages) +
    estimateToolAndSchemaTokens(request) +
    completion * (request.n ?? 1)
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
