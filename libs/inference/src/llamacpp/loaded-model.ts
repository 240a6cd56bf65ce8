import type { ChatHistoryItem, SequenceEvaluateOptions, Token } from 'node-llama-cpp';
import type { LlamaCppOptions } from './llamacpp.options';

/** One sequence of the shared context: a generation of its own, batched with the others by llama.cpp. */
export interface LlamaSequence {
  /** Evaluates the prompt, then yields each generated token; ends by itself at an end-of-generation token. */
  evaluate(
    tokens: Token[],
    options: SequenceEvaluateOptions,
  ): AsyncGenerator<Token, void, void | Token | Token[]>;
  dispose(): Promise<void>;
}

export interface RenderedPrompt {
  /** The chat rendered by the model's chat template, tokenized by the model's tokenizer. */
  tokens: Token[];
  /** End-of-turn markers of the template that are plain text (matched like stop sequences). */
  stopTexts: string[];
  /** End-of-turn markers of the template that are special tokens (matched on the token stream). */
  stopTokenSequences: Token[][];
}

/**
 * What the backend needs of a loaded model. node-llama-cpp's objects stay behind this seam (see
 * node-llama-cpp.loader.ts), so the generation logic is unit-tested with a fake model and the real one
 * end to end.
 */
export interface LoadedLlamaModel {
  /** Tokens one sequence holds: prompt and completion together must fit. */
  readonly contextSize: number;
  /** For the start-up log: file, context, chat wrapper, compute. */
  readonly description: string;
  renderPrompt(history: ChatHistoryItem[]): RenderedPrompt;
  /** Text of `tokens` following `context` (the tokens before them, for spacing); special tokens as nothing. */
  detokenize(tokens: readonly Token[], context: readonly Token[]): string;
  /** Throws when the context has no free sequence (the backend's pool prevents that). */
  getSequence(): LlamaSequence;
  dispose(): Promise<void>;
}

export type LlamaModelLoader = (modelId: string, options: LlamaCppOptions) => Promise<LoadedLlamaModel>;
