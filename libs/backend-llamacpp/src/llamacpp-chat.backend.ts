import { randomInt } from 'node:crypto';
import type { ChatModelFunctions, GbnfJsonSchema, Token } from 'node-llama-cpp';
import type { CatalogModel } from '@mgw/config';
import { GatewayError } from '@mgw/contracts';
import {
  type BackendSettings,
  type ChatBackend,
  type ChatInferenceEvent,
  type ChatInferenceRequest,
  type ToolDefinition,
  toSeed32,
} from '@mgw/inference';
import { toChatHistory, withResponseFormat } from './chat-history.mapper';
import { ChoiceGenerator, type PreparedPrompt, type PreparedTools } from './choice.generator';
import { EventChannel } from './event.channel';
import { toGbnfJsonSchema } from './gbnf-schema.mapper';
import type {
  EvaluateOptions,
  LlamaModelLoader,
  LlamaSequence,
  LoadedLlamaModel,
  ModelGrammar,
} from './loaded-model';
import { parseLlamaCppOptions, type LlamaCppOptions } from './llamacpp.options';
import { loadLlamaModel } from './node-llama-cpp.loader';
import { SequencePool } from './sequence.pool';

/** OpenAI applies its penalties to the tokens generated so far; llama.cpp needs a bound on that list. */
const PENALTY_WINDOW = 1024;

const ANSWER_PARAM = 'response_format.json_schema.schema';

/**
 * The grammar of a schema that passed the subset check; one llama.cpp still cannot compile (e.g. a `$ref`
 * to a definition that does not exist) is the client's error too.
 */
async function compileSchema(
  loaded: LoadedLlamaModel,
  schema: GbnfJsonSchema,
  param: string,
): Promise<ModelGrammar> {
  try {
    return await loaded.jsonGrammar(schema);
  } catch (error) {
    throw GatewayError.invalidRequest(
      `${param}: this model cannot turn the schema into a grammar (${error instanceof Error ? error.message : String(error)}).`,
      param,
    );
  }
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
 * Tools, structured outputs and logprobs (see ChoiceGenerator): function calls in the wrapper's own syntax
 * with grammar-constrained names and arguments, JSON answers under a grammar, and per-token probabilities
 * from the sampler. Each costs only the requests that ask for it.
 *
 * Abort: a waiting choice leaves the sequence queue at once; a generating one stops at its next token.
 * Sequences are given back on every path.
 *
 * Prompt reuse: a sequence given back keeps its KV cache, and the next prompt runs on the free sequence that
 * already holds the longest prefix of it (SequencePool), evaluating only the rest: a conversation's next turn
 * stays on its sequence and pays the prefill of its new messages only.
 */
export class LlamaCppChatBackend implements ChatBackend {
  private loaded: LoadedLlamaModel | null = null;
  private loading: Promise<void> | null = null;
  private readonly pool: SequencePool<LlamaSequence>;
  private readonly counters = { choices: 0, reusedPromptTokens: 0 };

  constructor(
    private readonly modelId: string,
    private readonly options: LlamaCppOptions,
    private readonly loader: LlamaModelLoader = loadLlamaModel,
  ) {
    this.pool = new SequencePool(options.sequences);
  }

  /**
   * Choices generated, and prompt tokens they found already in their sequence's KV cache (kept from an
   * earlier turn of the conversation) instead of evaluating them again.
   */
  get promptReuse(): { readonly choices: number; readonly reusedPromptTokens: number } {
    return { ...this.counters };
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
    const prompt = await this.prepare(loaded, request);

    // One controller stops every choice: the caller's abort, or the consumer leaving early (an error in
    // another choice, or the caller stopping its iteration).
    const stop = new AbortController();
    const forwardAbort = () => stop.abort(signal.reason);
    signal.addEventListener('abort', forwardAbort, { once: true });
    const channel = new EventChannel<ChatInferenceEvent>();
    const completionTokens = new Array<number>(request.n).fill(0);
    const runs = Array.from({ length: request.n }, (_, choice) =>
      this.runChoice(loaded, request, prompt, choice, stop.signal, channel).then((tokens) => {
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
    // Disposing the context disposes its sequences; the kept ones are only forgotten.
    this.pool.drain();
    await loaded?.dispose();
  }

  /**
   * The prompt's tokens exactly as `generate` reports them in its usage: the same rendering, without a
   * sequence, a grammar or a generated token.
   */
  countPromptTokens(request: ChatInferenceRequest, signal: AbortSignal): Promise<number> {
    // The rendering is synchronous; run in a promise, its refusals (a 400) are rejections like a generation's.
    return Promise.resolve().then(() => {
      signal.throwIfAborted();
      const loaded = this.loaded;
      if (loaded === null) throw new Error(`llamacpp model "${this.modelId}" is not loaded`);
      return this.render(loaded, request).rendered.tokens.length;
    });
  }

  /**
   * The chat rendered by the model's template, tokenized, with the offered functions documented in it;
   * what `generate` prompts with and `countPromptTokens` counts. A function's schema the grammar cannot
   * enforce is refused here, as a 400, so a count refuses what a generation would.
   */
  private render(loaded: LoadedLlamaModel, request: ChatInferenceRequest) {
    const offered = this.offeredTools(request);
    const answerSchema =
      request.responseFormat.type === 'json_schema'
        ? toGbnfJsonSchema(request.responseFormat.schema, ANSWER_PARAM)
        : null;
    const argumentSchemas = offered.map(({ tool, index }) => {
      const param = `tools[${index}].function.parameters`;
      return { name: tool.name, param, schema: toGbnfJsonSchema(tool.parameters, param, !tool.strict) };
    });

    const history = withResponseFormat(toChatHistory(request.messages, this.modelId), request.responseFormat);
    const functions: ChatModelFunctions | undefined =
      offered.length === 0
        ? undefined
        : Object.fromEntries(
            offered.map(({ tool }, i) => [
              tool.name,
              {
                ...(tool.description !== undefined ? { description: tool.description } : {}),
                params: argumentSchemas[i]!.schema,
              },
            ]),
          );
    return { rendered: loaded.renderPrompt(history, functions), offered, answerSchema, argumentSchemas };
  }

  /**
   * Everything the choices share, before any output: the rendered prompt (with the offered functions
   * documented in it), and the grammars. A schema the grammar cannot enforce is refused here, as a 400.
   */
  private async prepare(loaded: LoadedLlamaModel, request: ChatInferenceRequest): Promise<PreparedPrompt> {
    const { rendered, offered, answerSchema, argumentSchemas } = this.render(loaded, request);
    const { tokens, stopTexts, stopTokenSequences } = rendered;
    if (tokens.length >= loaded.contextSize) {
      throw GatewayError.invalidRequest(
        `This model's maximum context length is ${loaded.contextSize} tokens, and the messages take ${tokens.length}; shorten them.`,
        'messages',
        'context_length_exceeded',
      );
    }

    let answerGrammar: ModelGrammar | null = null;
    if (request.responseFormat.type === 'json_object') answerGrammar = await loaded.jsonGrammar(null);
    else if (answerSchema !== null) answerGrammar = await compileSchema(loaded, answerSchema, ANSWER_PARAM);
    let tools: PreparedTools | null = null;
    if (offered.length > 0) {
      const choice = request.toolChoice;
      const callable =
        choice.type === 'function' ? argumentSchemas.filter((s) => s.name === choice.name) : argumentSchemas;
      tools = {
        mode: choice.type === 'auto' ? 'auto' : 'forced',
        names: callable.map((s) => s.name),
        argumentGrammars: new Map(
          await Promise.all(
            callable.map(async (s) => [s.name, await compileSchema(loaded, s.schema, s.param)] as const),
          ),
        ),
        syntax: loaded.functionCallSyntax,
      };
    }
    return {
      tokens,
      stopTexts: [...request.stop, ...stopTexts],
      stopTokenSequences,
      maxTokens: request.maxTokens,
      contextSize: loaded.contextSize,
      answerGrammar,
      tools,
      topLogprobs: request.logprobs ? request.topLogprobs : null,
    };
  }

  /** The functions documented to the model: none with tool_choice none, else every tool of the request. */
  private offeredTools(request: ChatInferenceRequest): Array<{ tool: ToolDefinition; index: number }> {
    const choice = request.toolChoice;
    if (choice.type === 'none') return [];
    if (choice.type === 'function' && !request.tools.some((tool) => tool.name === choice.name)) {
      throw GatewayError.invalidRequest(
        `tool_choice names the function "${choice.name}", which is not in tools.`,
        'tool_choice',
      );
    }
    return request.tools.map((tool, index) => ({ tool, index }));
  }

  /** Generates one choice on a sequence of its own; resolves to the number of tokens it generated. */
  private async runChoice(
    loaded: LoadedLlamaModel,
    request: ChatInferenceRequest,
    prompt: PreparedPrompt,
    choice: number,
    stop: AbortSignal,
    channel: EventChannel<ChatInferenceEvent>,
  ): Promise<number> {
    const lease = await this.pool.acquire(prompt.tokens, stop);
    let sequence: LlamaSequence | null = lease.sequence;
    let keep = false;
    try {
      sequence ??= loaded.getSequence();
      // At least the prompt's last token is evaluated: its logits give the first generated token.
      const cached = await sequence.keepPrefixOf(prompt.tokens.slice(0, -1));
      this.counters.choices++;
      this.counters.reusedPromptTokens += cached;
      const generator = new ChoiceGenerator(
        loaded,
        sequence,
        prompt,
        cached,
        choice,
        this.sampling(request, choice),
        stop,
        channel,
      );
      try {
        await generator.run();
      } catch (error) {
        // A stopped generation leaves a consistent sequence behind; any other failure, one not to trust.
        keep = stop.aborted;
        throw error;
      }
      keep = true;
      return generator.completionTokens;
    } finally {
      if (keep && sequence !== null && this.loaded === loaded) {
        lease.release({ sequence, history: sequence.contextTokens });
      } else {
        await sequence?.dispose();
        lease.release(null);
      }
    }
  }

  /**
   * The sampling settings of one choice, for each of its phases; `generated` are the tokens the choice has
   * sampled so far (what the penalties apply to).
   */
  private sampling(request: ChatInferenceRequest, choice: number): (generated: Token[]) => EvaluateOptions {
    const penalize = request.presencePenalty !== 0 || request.frequencyPenalty !== 0;
    // Distinct per choice, so n choices are n independent samples; reproducible when the client seeds.
    const seed =
      request.seed === null ? randomInt(0, 0x1_0000_0000) : (toSeed32(request.seed) + choice) >>> 0;
    return (generated) => ({
      temperature: request.temperature,
      topP: request.topP,
      seed,
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
    });
  }
}
