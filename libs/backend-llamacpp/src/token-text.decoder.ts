/** How llama.cpp turns tokens into text; `context` are the tokens before them (for spacing heuristics). */
export type Detokenize<T extends number> = (tokens: readonly T[], context: readonly T[]) => string;

/** A UTF-8 character spans at most 4 bytes, hence at most 4 byte-level tokens. */
const MAX_TOKENS_PER_CHARACTER = 4;
const CONTEXT_TOKENS = 8;
const REPLACEMENT = '\uFFFD';

/**
 * Turns a stream of generated tokens into text fragments as soon as they are whole: a character split
 * over several tokens decodes to U+FFFD until its last byte arrives, so such a tail is held (up to one
 * character's worth of tokens, after which it really is invalid text and is sent as decoded).
 */
export class TokenTextDecoder<T extends number = number> {
  private pending: T[] = [];
  private context: T[] = [];

  constructor(private readonly detokenize: Detokenize<T>) {}

  push(token: T): string {
    this.pending.push(token);
    const text = this.detokenize(this.pending, this.context);
    if (text.endsWith(REPLACEMENT) && this.pending.length < MAX_TOKENS_PER_CHARACTER) return '';
    this.context = [...this.context, ...this.pending].slice(-CONTEXT_TOKENS);
    this.pending = [];
    return text;
  }

  /** Whatever is still held, decoded as it is (the generation ended). */
  flush(): string {
    if (this.pending.length === 0) return '';
    const text = this.detokenize(this.pending, this.context);
    this.pending = [];
    return text;
  }
}
