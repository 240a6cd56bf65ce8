export type FinishReason = 'stop' | 'length';
export const FINISH_REASONS: readonly FinishReason[] = ['stop', 'length'];

export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ChatCompletionChoice {
  index: number;
  message: { role: 'assistant'; content: string };
  logprobs: null;
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
  delta: { role?: 'assistant'; content?: string };
  logprobs: null;
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
