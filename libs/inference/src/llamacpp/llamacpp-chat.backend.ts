import { randomInt } from 'node:crypto';
import type { SequenceEvaluateOptions, Token } from 'node-llama-cpp';
import type { CatalogModel } from '@mgw/config';
import { GatewayError, type FinishReason } from '@mgw/contracts';
import type { BackendSettings } from '../backend-settings';
import type { ChatBackend, ChatInferenceEvent, ChatInferenceRequest } from '../chat-backend.interface';
import { toSeed32 } from '../simulator/seeded-random';
import { StopSequenceMatcher } from '../text/stop-sequence.matcher';
import { toChatHistory } from './chat-history.mapper';
import { EventChannel } from './event.channel';
import type { LlamaModelLoader, LoadedLlamaModel } from './loaded-model';
import { parseLlamaCppOptions, type LlamaCppOptions } from './llamacpp.options';
import { loadLlamaModel } from './node-llama-cpp.loader';
import { SequencePool } from './sequence.pool';
import { TokenTextDecoder } from './token-text.decoder';

/** OpenAI applies its penalties to the tokens generated so far; llama.cpp needs a bound on that list. */
const PENALTY_WINDOW = 1024;

/** What every choice of one request shares. */
interface PreparedPrompt {
  tokens: Token[];
  /** The user's stop sequences plus the chat template's end-of-turn texts. */
  stopTexts: string[];
  /** End-of-turn markers of the template that are special tokens rather than text. */
  stopTokenSequences: Token[][];
  /** Most tokens a choice may generate: max_tokens, or what is left of the context. */
  budget: number;
  request: ChatInferenceRequest;
}

function endsWith(tokens: readonly Token[], suffix: readonly Token[]): boolean {
  if (suffix.length === 0 || suffix.length > tokens.length) return false;
  const offset = tokens.length - suffix.length;
  return suffix.every((token, i) => tokens[offset + i] === token);
}

/**
 * A GGUF model run in-process by llama.cpp (node-llama-cpp). The model and one context are loaded once
 * (`load`, before the worker registers); every choice of every concurrent job decodes on a sequence of that
 * context, so llama.cpp batches them together. The prompt is the chat rendered by the wrapper node-llama-cpp
 * resolves from the GGUF's own chat template, and every count is llama.cpp's own tokenizer.
 *
 * Sampling: temperature (0 = greedy), top_p, presence/frequency penalties over the generated tokens, and
 * `seed` (choice i uses seed + i; without a seed each choice draws a random one). `stop` is matched on the
 * decoded text, so a stop sequence split across tokens is still caught and never sent.
 *
 * Abort: a waiting choice leaves the sequence queue at once; a generating one stops at its next token.
 * Sequences are given back on every path.
 */
export class LlamaCppChatBackend implements ChatBackend {
  private loaded: LoadedLlamaModel | null = null;
  private loading: Promise<void> | null = null;
  private readonly pool: SequencePool;

  constructor(
    private readonly modelId: string,
    private readonly options: LlamaCppOptions,
    private readonly loader: LlamaModelLoader = loadLlamaModel,
  ) {
    this.pool = new SequencePool(options.sequences);
  }

  /** `this: void`: the backend factory keeps this function in a map and calls it unbound. */
  static fromCatalog(this: void, model: CatalogModel, settings: BackendSettings): LlamaCppChatBackend {
    return new LlamaCppChatBackend(model.id, parseLlamaCppOptions(model, settings));
  }

  /** Loads the model and creates its context; once, however often it is called. */
  load(): Promise<void> {
    this.loading ??= this.loader(this.modelId, this.options).then((loaded) => {
      this.loaded = loaded;
    });
    return this.loading;
  }

  /** A short description for the worker's start-up log. */
  describe(): string {
    return this.loaded?.description ?? 'not loaded';
  }

  async *generate(request: ChatInferenceRequest, signal: AbortSignal): AsyncGenerator<ChatInferenceEvent> {
    signal.throwIfAborted();
    const loaded = this.loaded;
    if (loaded === null) throw new Error(`llamacpp model "${this.modelId}" is not loaded`);
    const prompt = this.prepare(loaded, request);

    // One controller stops every choice: the caller's abort, or the consumer leaving early (an error in
    // another choice, or the caller stopping its iteration).
    const stop = new AbortController();
    const forwardAbort = () => stop.abort(signal.reason);
    signal.addEventListener('abort', forwardAbort, { once: true });
    const channel = new EventChannel<ChatInferenceEvent>();
    const completionTokens = new Array<number>(request.n).fill(0);
    const runs = Array.from({ length: request.n }, (_, choice) =>
      this.runChoice(loaded, prompt, choice, stop.signal, channel).then((tokens) => {
        completionTokens[choice] = tokens;
      }),
    );
    void Promise.all(runs).then(
      () => channel.close(),
      (error: unknown) => channel.fail(error),
    );
    try {
      for await (const event of channel) yield event;
      signal.throwIfAborted();
      yield {
        type: 'usage',
        promptTokens: prompt.tokens.length,
        completionTokens: completionTokens.reduce((sum, tokens) => sum + tokens, 0),
      };
    } finally {
      signal.removeEventListener('abort', forwardAbort);
      stop.abort(new Error('generation ended'));
      // Every sequence is back in the pool before this generation counts as over.
      await Promise.allSettled(runs);
    }
  }

  async close(): Promise<void> {
    await this.loading?.catch(() => undefined);
    const loaded = this.loaded;
    this.loaded = null;
    await loaded?.dispose();
  }

  private prepare(loaded: LoadedLlamaModel, request: ChatInferenceRequest): PreparedPrompt {
    const { tokens, stopTexts, stopTokenSequences } = loaded.renderPrompt(
      toChatHistory(request.messages, this.modelId),
    );
    if (tokens.length >= loaded.contextSize) {
      throw GatewayError.invalidRequest(
        `This model's maximum context length is ${loaded.contextSize} tokens, and the messages take ${tokens.length}; shorten them.`,
        'messages',
        'context_length_exceeded',
      );
    }
    const room = loaded.contextSize - tokens.length;
    const budget = request.maxTokens === null ? room : Math.min(request.maxTokens, room);
    return { tokens, stopTexts: [...request.stop, ...stopTexts], stopTokenSequences, budget, request };
  }

  /** Generates one choice on a sequence of its own; resolves to the number of tokens it generated. */
  private async runChoice(
    loaded: LoadedLlamaModel,
    prompt: PreparedPrompt,
    choice: number,
    stop: AbortSignal,
    channel: EventChannel<ChatInferenceEvent>,
  ): Promise<number> {
    const release = await this.pool.acquire(stop);
    const sequence = (() => {
      try {
        return loaded.getSequence();
      } catch (error) {
        release();
        throw error;
      }
    })();
    try {
      const generated: Token[] = [];
      const decoder = new TokenTextDecoder<Token>((tokens, context) => loaded.detokenize(tokens, context));
      const matcher = new StopSequenceMatcher(prompt.stopTexts);
      const send = (text: string): void => {
        if (text.length > 0) channel.push({ type: 'delta', choice, text });
      };
      let reason: FinishReason = 'stop';
      for await (const token of sequence.evaluate(
        prompt.tokens,
        this.sampling(prompt.request, choice, generated),
      )) {
        if (stop.aborted) break;
        generated.push(token);
        if (prompt.stopTokenSequences.some((suffix) => endsWith(generated, suffix))) break;
        const { emit, stopped } = matcher.push(decoder.push(token));
        send(emit);
        if (stopped) break;
        if (generated.length >= prompt.budget) {
          reason = 'length';
          break;
        }
      }
      stop.throwIfAborted();
      if (!matcher.isStopped) {
        // Bytes held for an unfinished character, then text held as a possible start of a stop sequence.
        send(matcher.push(decoder.flush()).emit);
        if (matcher.isStopped) reason = 'stop';
        else send(matcher.flush());
      }
      channel.push({ type: 'finish', choice, reason });
      return generated.length;
    } finally {
      await sequence.dispose();
      release();
    }
  }

  private sampling(
    request: ChatInferenceRequest,
    choice: number,
    generated: Token[],
  ): SequenceEvaluateOptions {
    const penalize = request.presencePenalty !== 0 || request.frequencyPenalty !== 0;
    return {
      temperature: request.temperature,
      topP: request.topP,
      // Distinct per choice, so n choices are n independent samples; reproducible when the client seeds.
      seed: request.seed === null ? randomInt(0, 0x1_0000_0000) : (toSeed32(request.seed) + choice) >>> 0,
      ...(penalize
        ? {
            repeatPenalty: {
              punishTokens: () => generated.slice(-PENALTY_WINDOW),
              maxPunishTokens: PENALTY_WINDOW,
              penalty: 1,
              presencePenalty: request.presencePenalty,
              frequencyPenalty: request.frequencyPenalty,
            },
          }
        : {}),
    };
  }
}
