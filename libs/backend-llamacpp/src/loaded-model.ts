import type {
  ChatHistoryItem,
  ChatModelFunctions,
  GbnfJsonSchema,
  SequenceEvaluateOptions,
  Token,
} from 'node-llama-cpp';
import type { LlamaCppOptions } from './llamacpp.options';

/**
 * A grammar compiled for the loaded model, opaque to the backend: each evaluation that passes it gets a
 * fresh evaluation state, so the tokens it samples follow the grammar from their first one.
 */
export interface ModelGrammar {
  /** For logs and tests: what the grammar accepts. */
  readonly label: string;
}

export interface EvaluateOptions extends Omit<SequenceEvaluateOptions, 'grammarEvaluationState'> {
  /** Constrains the sampled tokens; the evaluation ends (as at an end-of-generation token) once it is complete. */
  grammar?: ModelGrammar;
  /** Report each sampled token's probability and the vocabulary's, most likely first. */
  probabilities?: boolean;
}

export interface GeneratedToken {
  token: Token;
  /** With `probabilities`: the candidates' probabilities after sampling settings, most likely first. */
  probabilities?: ReadonlyMap<Token, number>;
}

/** One sequence of the shared context: a generation of its own, batched with the others by llama.cpp. */
export interface LlamaSequence {
  /**
   * Appends `tokens` to the sequence (after whatever earlier evaluations left in it), then yields each
   * generated token; ends by itself at an end-of-generation token. A yielded token enters the sequence
   * only when the generation continues past it, so the token at which a caller stops is not in it.
   */
  evaluate(tokens: Token[], options: EvaluateOptions): AsyncGenerator<GeneratedToken, void, void>;
  /** The tokens the sequence holds (in its KV cache), as earlier evaluations left them. */
  readonly contextTokens: readonly Token[];
  /**
   * Keeps the longest prefix the sequence holds in common with `tokens` and erases the rest; resolves to
   * how many tokens it kept, which the next evaluation need not append again.
   */
  keepPrefixOf(tokens: readonly Token[]): Promise<number>;
  dispose(): Promise<void>;
}

/** A marker of the chat template: plain text (matched on decoded text) or special tokens (on tokens). */
export interface TemplateMarkers {
  texts: string[];
  tokenSequences: Token[][];
}

/** How the model's chat wrapper writes a function call: `prefix` name `paramsPrefix` params suffix. */
export interface FunctionCallSyntax {
  /** Plain-text openings of a call in the model's output (the wrapper's call prefix and its alternates). */
  triggerTexts: string[];
  /**
   * Special tokens that open a call in the model's output, each with the rest of the wrapper's call prefix,
   * which the backend then writes itself.
   */
  triggerTokens: Array<{ token: Token; rest: Token[] }>;
  /** Tokens that open a call when the backend forces one. */
  prefix: Token[];
  /** Tokens between a function's name and its JSON arguments. */
  paramsPrefix(name: string): Token[];
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
  /** The chat rendered by the chat wrapper; `functions` are documented in it (e.g. in the system prompt). */
  renderPrompt(history: ChatHistoryItem[], functions?: ChatModelFunctions): RenderedPrompt;
  readonly functionCallSyntax: FunctionCallSyntax;
  /** Text of `tokens` following `context` (the tokens before them, for spacing); special tokens as nothing. */
  detokenize(tokens: readonly Token[], context: readonly Token[]): string;
  /** Plain text (no special tokens) as tokens. */
  tokenize(text: string): Token[];
  /** A token on its own, as text (special tokens by their name), for logprobs. */
  tokenText(token: Token): string;
  /** A grammar for JSON valid against `schema`; `null` for any JSON object. */
  jsonGrammar(schema: GbnfJsonSchema | null): Promise<ModelGrammar>;
  /** A grammar that accepts exactly one of `texts`. */
  choiceGrammar(texts: readonly string[]): Promise<ModelGrammar>;
  /** A new, empty sequence; throws when the context has no free one (the backend's pool prevents that). */
  getSequence(): LlamaSequence;
  dispose(): Promise<void>;
}

export type LlamaModelLoader = (modelId: string, options: LlamaCppOptions) => Promise<LoadedLlamaModel>;
