/** Why a choice ended, as OpenAI names it; kept end to end from the backend to the client. */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';
export const FINISH_REASONS: readonly FinishReason[] = ['stop', 'length', 'tool_calls', 'content_filter'];

/** A function call the model asked for (OpenAI `tool_calls[]`); `arguments` is a JSON text. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * One piece of a streamed tool call (`delta.tool_calls[]`): the first piece of call `index` carries `id`,
 * `type` and `function.name`; later pieces carry fragments of `function.arguments`.
 */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

/** A candidate token and its log probability; `bytes` is its UTF-8 encoding (null when it has none). */
export interface TopLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
}

/** A generated token's log probability and, when asked for, the `top_logprobs` most likely alternatives. */
export interface TokenLogprob extends TopLogprob {
  top_logprobs: TopLogprob[];
}

/** `choices[].logprobs` when the request set `logprobs: true`; `null` otherwise. */
export interface ChoiceLogprobs {
  content: TokenLogprob[] | null;
  refusal: null;
}

export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ChatCompletionMessage {
  role: 'assistant';
  /** null when the model only called tools. */
  content: string | null;
  tool_calls?: ToolCall[];
}

export interface ChatCompletionChoice {
  index: number;
  message: ChatCompletionMessage;
  logprobs: ChoiceLogprobs | null;
  finish_reason: FinishReason;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  system_fingerprint: string;
  choices: ChatCompletionChoice[];
  usage: CompletionUsage;
}

export interface ChatCompletionChunkChoice {
  index: number;
  delta: { role?: 'assistant'; content?: string | null; tool_calls?: ToolCallDelta[] };
  logprobs: ChoiceLogprobs | null;
  finish_reason: FinishReason | null;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  system_fingerprint: string;
  choices: ChatCompletionChunkChoice[];
  usage?: CompletionUsage;
}
