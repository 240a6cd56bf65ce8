import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { decodeGenerator, encode } from 'gpt-tokenizer';
import type { CatalogModel } from '@mgw/config';
import type { FinishReason, TokenLogprob } from '@mgw/contracts';
import {
  type BackendSettings,
  BoundedCache,
  type ChatBackend,
  type ChatInferenceEvent,
  type ChatInferenceRequest,
  countPromptTokensInSlices,
  countTextTokensInSlices,
  fnv1a32,
  pieceEnd,
  SeededRandom,
  StopSequenceMatcher,
  textOf,
  TimeSlicer,
  TOKENIZER_CACHE_LIMITS,
  TOKENIZER_OPTIONS,
  type ToolDefinition,
  toSeed32,
} from '@mgw/inference';
import { GatewayError } from '@mgw/contracts';
import { sampleJsonSchema } from './json-schema.sampler';
import { simulatedLogprobs } from './simulated-logprobs';
import { parseChatSimulatorOptions, type ChatSimulatorOptions } from './simulator.options';

type ChatMessages = ChatInferenceRequest['messages'];

/** At full speed, hand the event loop back this often so one huge generation cannot starve the process. */
const TOKENS_PER_EVENT_LOOP_TURN = 64;
const FALLBACK_ECHO = 'This is a simulated response.';
const TOOL_CALL_ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** Tool-call ids come from their own stream of the choice's seed, so they do not shift the arguments. */
const TOOL_CALL_ID_SALT = 0x9e3779b9;
/** Splitting a text into token segments is pure, and load tests repeat prompts: remembered within bounds. */
const segmentCache = new BoundedCache<readonly TokenSegment[]>(
  TOKENIZER_CACHE_LIMITS.entries,
  TOKENIZER_CACHE_LIMITS.maxKeyLength,
);

/** Common English words, most frequent first, so `top_p` can cut the tail like a real sampler would. */
const VOCABULARY: readonly string[] = (
  'the be to of and a in that have it for not on with he as you do at this but his by from they we say ' +
  'her she or an will my one all would there their what so up out if about who get which go me when make ' +
  'can like time no just him know take people into year your good some could them see other than then now ' +
  'look only come its over think also back after use two how our work first well way even new want because ' +
  'any these give day most us is are was were been has had did said made find here thing many long little ' +
  'very still great old world life hand part place case week company system program question government ' +
  'number night point home water room mother area money story fact month lot right study book eye job word ' +
  'business issue side kind head house service friend father power hour game line end member law car city ' +
  'community name president team minute idea kid body information school face others level office door ' +
  'health person art war history party result change morning reason research girl guy moment air teacher ' +
  'force education light river green small large next early young important few public bad same able'
).split(' ');

export interface TokenSegment {
  /** Decoded text; never a broken half of a multi-byte character. */
  text: string;
  /** How many tokens produced this text (more than one only when a character spans tokens). */
  tokens: number;
}

function decodeSegments(tokens: readonly number[]): TokenSegment[] {
  let consumed = 0;
  function* counted(): Generator<number> {
    for (const token of tokens) {
      consumed++;
      yield token;
    }
  }
  // decodeGenerator holds back bytes until they form whole characters and pulls no token ahead, so the
  // tokens consumed between two pieces are exactly the tokens that produced that piece.
  const segments: TokenSegment[] = [];
  let accounted = 0;
  for (const text of decodeGenerator(counted())) {
    segments.push({ text, tokens: consumed - accounted });
    accounted = consumed;
  }
  const last = segments.at(-1);
  if (last !== undefined) last.tokens += consumed - accounted;
  return segments;
}

/**
 * Splits `text` into per-token pieces for streaming. gpt-tokenizer decodes through one module-wide
 * streaming TextDecoder, so bytes left over by an unrelated caller's partial decode would corrupt the
 * first piece; that shows up as a mismatch, and the first pass has flushed the stale bytes, so one retry
 * suffices. Decoding a whole valid string at once never leaves bytes behind itself.
 */
export function tokenSegments(text: string): TokenSegment[] {
  const tokens = encode(text, TOKENIZER_OPTIONS);
  for (let attempt = 0; attempt < 2; attempt++) {
    const segments = decodeSegments(tokens);
    if (segments.map((segment) => segment.text).join('') === text) return segments;
  }
  return tokens.length === 0 ? [] : [{ text, tokens: tokens.length }];
}

/** `tokenSegments`, remembered per text; only a verified split is kept (the fallback is not worth it). */
function cachedTokenSegments(text: string): readonly TokenSegment[] {
  let verified = true;
  return segmentCache.getOrCompute(
    text,
    () => {
      const segments = tokenSegments(text);
      verified = segments.map((segment) => segment.text).join('') === text && segments.length > 0;
      return segments;
    },
    () => verified,
  );
}

/**
 * The token segments of one completion text, split piece by piece (see `pieceEnd`) as the stream reaches
 * them: an echo of a 10 MB prompt costs the event loop one piece at a time, and only as far as
 * `max_tokens` lets it run. Choices with the same text share one source, so the text is split once.
 */
class SegmentSource {
  /** A short text's segments, split at once (and cached), or the growing list of a long text's. */
  private readonly segments: readonly TokenSegment[];
  private readonly growing: TokenSegment[] = [];
  /** Characters of the text split so far. */
  private split: number;

  constructor(private readonly text: string) {
    if (text.length <= TOKENIZER_CACHE_LIMITS.maxKeyLength) {
      this.segments = cachedTokenSegments(text);
      this.split = text.length;
    } else {
      this.segments = this.growing;
      this.split = 0;
    }
  }

  /** The segment at `index`, splitting the next pieces as needed; undefined past the end of the text. */
  at(index: number): TokenSegment | undefined {
    while (index >= this.segments.length && this.split < this.text.length) {
      const end = pieceEnd(this.text, this.split);
      this.growing.push(...tokenSegments(this.text.slice(this.split, end)));
      this.split = end;
    }
    return this.segments[index];
  }

  isLast(index: number): boolean {
    return this.at(index + 1) === undefined;
  }
}

/** A message-order-sensitive fingerprint that ignores JSON key order, which differs between clients. */
function fingerprint(messages: ChatMessages): number {
  const canonical = messages.map((message) => {
    const fields: unknown[] = [
      message.role,
      ('name' in message ? message.name : undefined) ?? null,
      message.content === null || typeof message.content === 'string'
        ? message.content
        : message.content.map((part) =>
            part.type === 'text'
              ? ['text', part.text]
              : ['image_url', part.image_url.url, part.image_url.detail ?? null],
          ),
    ];
    // Only messages of a tool loop carry more, so plain conversations keep their fingerprints.
    if (message.role === 'tool') fields.push(message.toolCallId);
    if (message.role === 'assistant' && message.toolCalls !== undefined) {
      fields.push(message.toolCalls.map((call) => [call.id, call.function.name, call.function.arguments]));
    }
    return fields;
  });
  return fnv1a32(JSON.stringify(canonical));
}

function lastUserText(messages: ChatMessages): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role === 'user') return textOf(message.content);
  }
  return '';
}

const wordsOf = (text: string): string[] => text.split(/[^\p{L}\p{N}]+/u).filter((word) => word.length > 0);

/**
 * The results of the tool calls the conversation ends with, in order; empty unless it ends with one. A
 * user message right after the results still counts as their turn: the Messages API sends a user turn's
 * text beside its `tool_result` blocks, which reach the backend as tool messages and then that text.
 */
function trailingToolResults(messages: ChatMessages): string[] {
  const results: string[] = [];
  let last = messages.length - 1;
  if (messages[last]?.role === 'user' && messages[last - 1]?.role === 'tool') last--;
  for (let i = last; i >= 0; i--) {
    const message = messages[i];
    if (message?.role !== 'tool') break;
    results.unshift(textOf(message.content));
  }
  return results;
}

/** The tool a simulated turn calls: the one tool_choice names, else the first the user mentions, else the first. */
function chosenTool(request: ChatInferenceRequest): ToolDefinition | undefined {
  const choice = request.toolChoice;
  if (choice.type === 'function') {
    const named = request.tools.find((tool) => tool.name === choice.name);
    if (named !== undefined) return named;
  }
  const text = lastUserText(request.messages);
  return request.tools.find((tool) => text.includes(tool.name)) ?? request.tools[0];
}

function toolCallId(seed: number): string {
  const random = new SeededRandom((seed ^ TOOL_CALL_ID_SALT) >>> 0);
  let id = 'call_';
  for (let i = 0; i < 24; i++)
    id += TOOL_CALL_ID_ALPHABET.charAt(random.nextInt(TOOL_CALL_ID_ALPHABET.length));
  return id;
}

function echoText(messages: ChatMessages): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role === 'user') {
      const text = textOf(message.content);
      return text.length > 0 ? text : FALLBACK_ECHO;
    }
  }
  return FALLBACK_ECHO;
}

function wordsText(random: SeededRandom, wordCount: number, poolSize: number): string {
  const words: string[] = [];
  let sentenceLeft = 0;
  for (let i = 0; i < wordCount; i++) {
    let word = VOCABULARY[random.nextInt(poolSize)] ?? 'the';
    if (sentenceLeft === 0) {
      sentenceLeft = random.nextIntBetween(6, 14);
      word = word.charAt(0).toUpperCase() + word.slice(1);
    }
    sentenceLeft--;
    if (sentenceLeft === 0 && i < wordCount - 1) word += '.';
    words.push(word);
  }
  return `${words.join(' ')}.`;
}

/** Sleeps, but rejects with the abort reason itself rather than Node's wrapping AbortError. */
async function pause(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch (error) {
    signal.throwIfAborted();
    throw error;
  }
}

async function yieldTurn(signal: AbortSignal): Promise<void> {
  try {
    await nextTurn(undefined, { signal });
  } catch (error) {
    signal.throwIfAborted();
    throw error;
  }
}

/** What one choice produces: text, or a call of one tool whose JSON arguments stream instead. */
interface ChoicePlan {
  text: string;
  toolCall: { id: string; name: string } | null;
}

interface ChoiceRun {
  index: number;
  segments: SegmentSource;
  next: number;
  /** Tokens generated so far, including any text a stop sequence later withholds. */
  generated: number;
  emitted: string;
  matcher: StopSequenceMatcher;
  finished: boolean;
  /** Set when the choice calls a tool: `segments` are then its arguments, and no content is sent. */
  toolCall: { id: string; name: string } | null;
  /** With `logprobs`: the log probabilities of tokens whose text the stop matcher still holds. */
  pendingLogprobs: Array<{ end: number; logprobs: TokenLogprob[] }> | null;
  /** Characters pushed into the stop matcher so far, and characters it has let out. */
  pushed: number;
  released: number;
}

/**
 * A chat model simulator for demos, tests and load tests: deterministic text, real token counts,
 * OpenAI-like timing (time to first token, then a steady per-choice token rate).
 *
 * Sampling: `seed` (or, without one, a fingerprint of the messages) seeds choice i with seed + i.
 * `temperature` 0 is greedy: every choice gets the one sequence derived from the messages alone.
 * Otherwise temperature does not reshape the distribution. `top_p` < 1 keeps only the first
 * ceil(top_p × vocabulary) (most common) words. Penalties and `user` are accepted and ignored.
 *
 * Abort: once `signal` aborts, the generator throws `signal.reason` at its next step (waits are cut
 * short), and yields nothing more.
 */
export class ChatSimulatorBackend implements ChatBackend {
  constructor(private readonly options: ChatSimulatorOptions) {}

  /** `this: void`: the backend factory keeps this function in a map and calls it unbound. */
  static fromCatalog(this: void, model: CatalogModel, settings: BackendSettings): ChatSimulatorBackend {
    return new ChatSimulatorBackend(parseChatSimulatorOptions(model, settings));
  }

  /** The count `generate` reports as its usage's `promptTokens`, by the same counter. */
  async countPromptTokens(request: ChatInferenceRequest, signal: AbortSignal): Promise<number> {
    signal.throwIfAborted();
    return await countPromptTokensInSlices(request, new TimeSlicer(signal));
  }

  async *generate(request: ChatInferenceRequest, signal: AbortSignal): AsyncGenerator<ChatInferenceEvent> {
    signal.throwIfAborted();
    const slicer = new TimeSlicer(signal);
    const promptTokens = await countPromptTokensInSlices(request, slicer);
    const { contextTokens } = this.options;
    if (contextTokens !== undefined && promptTokens > contextTokens) {
      throw GatewayError.contextLengthExceeded(contextTokens, promptTokens, false);
    }
    const sources = new Map<string, SegmentSource>();
    const sourceOf = (text: string): SegmentSource => {
      let source = sources.get(text);
      if (source === undefined) sources.set(text, (source = new SegmentSource(text)));
      return source;
    };
    const runs: ChoiceRun[] = this.plans(request).map(({ text, toolCall }, index) => ({
      index,
      segments: sourceOf(text),
      next: 0,
      generated: 0,
      emitted: '',
      matcher: new StopSequenceMatcher(request.stop),
      finished: false,
      toolCall,
      pendingLogprobs: request.logprobs && toolCall === null ? [] : null,
      pushed: 0,
      released: 0,
    }));

    if (this.options.ttftMs > 0) await pause(this.options.ttftMs, signal);
    const interval = this.options.tokensPerSecond > 0 ? 1000 / this.options.tokensPerSecond : 0;
    // Rounds are scheduled against the start time, not chained, so timer lateness does not add up
    // and the observed rate stays at tokensPerSecond.
    const start = performance.now();
    let sinceTurn = 0;
    let deltas = 0;
    for (let round = 0; runs.some((run) => !run.finished); round++) {
      const wait = start + round * interval - performance.now();
      if (wait >= 1) {
        await pause(wait, signal);
        sinceTurn = 0;
      } else if (sinceTurn >= TOKENS_PER_EVENT_LOOP_TURN) {
        await yieldTurn(signal);
        sinceTurn = 0;
      }
      for (const run of runs) {
        if (run.finished) continue;
        for (const event of this.step(run, request)) {
          if (
            (event.type === 'delta' || event.type === 'tool-call-arguments') &&
            this.options.failAfterTokens > 0 &&
            deltas++ === this.options.failAfterTokens
          ) {
            throw new Error(`simulated backend failure after ${this.options.failAfterTokens} tokens`);
          }
          yield event;
          signal.throwIfAborted();
        }
        sinceTurn++;
      }
    }

    // A stop sequence can cut inside a token; counting the text actually sent keeps usage equal to what
    // a client would count, and never above what was generated. Equal texts (n echoes) are counted once.
    const counted = new Map<string, number>();
    let completionTokens = 0;
    for (const run of runs) {
      if (run.toolCall !== null) {
        completionTokens += run.generated;
        continue;
      }
      let tokens = counted.get(run.emitted);
      if (tokens === undefined) {
        tokens = await countTextTokensInSlices(run.emitted, slicer);
        counted.set(run.emitted, tokens);
      }
      completionTokens += Math.min(tokens, run.generated);
    }
    yield { type: 'usage', promptTokens, completionTokens };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /**
   * What each choice produces. Requests without tools, a JSON response format or a tool result to answer
   * take the plain path and pay nothing for those features.
   */
  private plans(request: ChatInferenceRequest): ChoicePlan[] {
    const toolResults = trailingToolResults(request.messages);
    const callsTool =
      request.tools.length > 0 && request.toolChoice.type !== 'none' && toolResults.length === 0;
    if (!callsTool && toolResults.length === 0 && request.responseFormat.type === 'text') {
      return this.completionTexts(request).map((text) => ({ text, toolCall: null }));
    }
    const n = Math.max(1, request.n);
    const messagesSeed = fingerprint(request.messages);
    const base = request.seed === null ? messagesSeed : toSeed32(request.seed);
    // Like the words: temperature 0 gives every choice the same sample; each call still gets its own id.
    const sampleSeed = (index: number) => (request.temperature === 0 ? messagesSeed : (base + index) >>> 0);
    const echo = this.options.mode === 'echo';

    if (callsTool) {
      const tool = chosenTool(request);
      if (tool !== undefined) {
        const words = echo ? wordsOf(lastUserText(request.messages)) : VOCABULARY;
        return Array.from({ length: n }, (_, index) => ({
          text: JSON.stringify(sampleJsonSchema(tool.parameters, { seed: sampleSeed(index), words })),
          toolCall: { id: toolCallId((base + index) >>> 0), name: tool.name },
        }));
      }
    }
    const texts =
      toolResults.length > 0
        ? this.toolAnswers(request, toolResults, n, sampleSeed)
        : this.completionTexts(request);
    const format = request.responseFormat;
    return texts.map((text, index) => {
      if (format.type === 'json_object') {
        return { text: JSON.stringify({ [echo ? 'echo' : 'text']: text }), toolCall: null };
      }
      if (format.type === 'json_schema') {
        const instance = sampleJsonSchema(format.schema, { seed: sampleSeed(index), words: wordsOf(text) });
        return { text: JSON.stringify(instance), toolCall: null };
      }
      return { text, toolCall: null };
    });
  }

  /** After tool results, the answer quotes them (then, in words mode, goes on with pseudo-text). */
  private toolAnswers(
    request: ChatInferenceRequest,
    results: readonly string[],
    n: number,
    sampleSeed: (index: number) => number,
  ): string[] {
    const quoted = `The tool returned: ${results.join('\n')}`;
    if (this.options.mode === 'echo') return new Array<string>(n).fill(quoted);
    const poolSize = Math.min(VOCABULARY.length, Math.max(1, Math.ceil(request.topP * VOCABULARY.length)));
    return Array.from(
      { length: n },
      (_, index) =>
        `${quoted}\n\n${wordsText(new SeededRandom(sampleSeed(index)), this.options.maxWords, poolSize)}`,
    );
  }

  private completionTexts(request: ChatInferenceRequest): string[] {
    const n = Math.max(1, request.n);
    if (this.options.mode === 'echo') return new Array<string>(n).fill(echoText(request.messages));

    const poolSize = Math.min(VOCABULARY.length, Math.max(1, Math.ceil(request.topP * VOCABULARY.length)));
    const messagesSeed = fingerprint(request.messages);
    if (request.temperature === 0) {
      return new Array<string>(n).fill(
        wordsText(new SeededRandom(messagesSeed), this.options.maxWords, poolSize),
      );
    }
    const base = request.seed === null ? messagesSeed : toSeed32(request.seed);
    return Array.from({ length: n }, (_, index) =>
      wordsText(new SeededRandom((base + index) >>> 0), this.options.maxWords, poolSize),
    );
  }

  /** Advances one choice by one token. */
  private *step(run: ChoiceRun, request: ChatInferenceRequest): Generator<ChatInferenceEvent> {
    const { maxTokens } = request;
    const done: FinishReason = run.toolCall === null ? 'stop' : 'tool_calls';
    const segment = run.segments.at(run.next);
    if (segment === undefined) {
      yield* this.finish(run, done);
      return;
    }
    if (maxTokens !== null && run.generated + segment.tokens > maxTokens) {
      yield* this.finish(run, 'length');
      return;
    }
    const position = run.generated;
    run.next++;
    run.generated += segment.tokens;
    if (run.toolCall !== null) {
      // Stop sequences apply to content only; arguments stream whole, as an upstream model's would.
      if (run.next === 1) yield { type: 'tool-call-start', choice: run.index, index: 0, ...run.toolCall };
      yield { type: 'tool-call-arguments', choice: run.index, index: 0, fragment: segment.text };
    } else {
      if (run.pendingLogprobs !== null) {
        run.pushed += segment.text.length;
        run.pendingLogprobs.push({
          end: run.pushed,
          logprobs: simulatedLogprobs(segment.text, segment.tokens, position, request.topLogprobs),
        });
      }
      const { emit, stopped } = run.matcher.push(segment.text);
      if (emit.length > 0) yield this.delta(run, emit);
      if (stopped) {
        yield* this.finish(run, 'stop');
        return;
      }
    }
    // Finish in the same round as the last token rather than one token interval later.
    if (run.segments.isLast(run.next - 1)) {
      yield* this.finish(run, done);
    } else if (maxTokens !== null && run.generated >= maxTokens) {
      yield* this.finish(run, 'length');
    }
  }

  /**
   * A content delta. With logprobs, it carries those of every token whose text it completes: the stop
   * matcher can hold text back, and the logprobs wait with it; text a stop sequence cuts, or a token cut
   * in two, leaves its logprobs out, so the listed tokens are exactly the ones sent whole.
   */
  private delta(run: ChoiceRun, text: string): ChatInferenceEvent {
    run.emitted += text;
    const pending = run.pendingLogprobs;
    if (pending === null) return { type: 'delta', choice: run.index, text };
    run.released += text.length;
    let taken = 0;
    while (taken < pending.length && pending[taken]!.end <= run.released) taken++;
    const logprobs = pending.splice(0, taken).flatMap((entry) => entry.logprobs);
    return { type: 'delta', choice: run.index, text, logprobs };
  }

  private *finish(run: ChoiceRun, reason: FinishReason): Generator<ChatInferenceEvent> {
    run.finished = true;
    // The held tail can no longer grow into a stop sequence, so it belongs to the answer.
    const rest = run.matcher.flush();
    if (rest.length > 0) yield this.delta(run, rest);
    const stopSequence = run.matcher.matched;
    yield stopSequence === null
      ? { type: 'finish', choice: run.index, reason }
      : { type: 'finish', choice: run.index, reason, stopSequence };
  }
}
