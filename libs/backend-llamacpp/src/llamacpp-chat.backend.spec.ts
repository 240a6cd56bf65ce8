import { setImmediate as nextTurn } from 'node:timers/promises';
import type { ChatModelFunctions, GbnfJsonSchema, Token } from 'node-llama-cpp';
import { GatewayError } from '@mgw/contracts';
import type { ChatInferenceEvent, ChatInferenceRequest, ToolDefinition } from '@mgw/inference';
import type {
  EvaluateOptions,
  FunctionCallSyntax,
  GeneratedToken,
  LlamaSequence,
  LoadedLlamaModel,
  ModelGrammar,
} from './loaded-model';
import { LlamaCppChatBackend } from './llamacpp-chat.backend';
import type { LlamaCppOptions } from './llamacpp.options';
import { chatInferenceRequest } from '@mgw/testing';

/** The template's end-of-turn special token in the fake model. */
const END_OF_TURN = 999 as Token;

const tokensOf = (text: string) => [...text].map((c) => c.charCodeAt(0) as Token);

/** The fake template's special token that opens a function call (like Qwen's <tool_call>). */
const CALL_TOKEN = 998 as Token;

/**
 * A fake loaded model at the node-llama-cpp seam: one token per character, prompts rendered as
 * "<role>:text" lines (and the offered functions as a "functions:" line), and sequences that "generate" a
 * scripted text (forever, when `endless`); under a grammar they generate what `grammarOutput` says.
 */
class FakeModel implements LoadedLlamaModel {
  readonly description = 'fake';
  readonly evaluations: EvaluateOptions[] = [];
  /** The tokens each evaluation appended to its sequence. */
  readonly appended: string[] = [];
  readonly renderedFunctions: Array<ChatModelFunctions | undefined> = [];
  readonly functionCallSyntax: FunctionCallSyntax = {
    triggerTexts: ['||call: ', '||call:'],
    triggerTokens: [{ token: CALL_TOKEN, rest: tokensOf('{"name": "') }],
    prefix: tokensOf('||call: '),
    paramsPrefix: (name) => tokensOf(`<${name}>(`),
  };
  grammarOutput: (grammar: ModelGrammar) => string = () => '{}';
  /** Live sequences (created, not disposed), the most at once, and every one created. */
  active = 0;
  maxActive = 0;
  created = 0;
  disposedSequences = 0;
  /** Sequences the context holds: getSequence throws beyond it, as llama.cpp's does. */
  capacity = Infinity;
  disposed = false;

  constructor(
    readonly contextSize: number,
    readonly script: (seed: number | undefined) => {
      text: string;
      endless?: boolean;
      tail?: Token[];
    },
  ) {}

  renderPrompt(history: Parameters<LoadedLlamaModel['renderPrompt']>[0], functions?: ChatModelFunctions) {
    this.renderedFunctions.push(functions);
    const text =
      (functions === undefined ? '' : `functions:${JSON.stringify(functions)}\n`) +
      history
        .map((item) =>
          'text' in item ? `${item.type}:${JSON.stringify(item.text).slice(1, -1)}\n` : 'model:',
        )
        .join('');
    return { tokens: tokensOf(text), stopTexts: ['<|end|>'], stopTokenSequences: [[END_OF_TURN]] };
  }

  detokenize(tokens: readonly Token[]): string {
    return tokens.map((t) => (t === END_OF_TURN || t === CALL_TOKEN ? '' : String.fromCharCode(t))).join('');
  }

  tokenize(text: string): Token[] {
    return tokensOf(text);
  }

  tokenText(token: Token): string {
    return String.fromCharCode(token);
  }

  jsonGrammar(schema: GbnfJsonSchema | null): Promise<ModelGrammar> {
    if (schema !== null && '$ref' in schema) return Promise.reject(new Error('no such definition'));
    return Promise.resolve({ label: schema === null ? 'json' : `json ${JSON.stringify(schema)}` });
  }

  choiceGrammar(texts: readonly string[]): Promise<ModelGrammar> {
    return Promise.resolve({ label: `one of ${texts.join('|')}` });
  }

  getSequence(): LlamaSequence {
    if (this.active >= this.capacity) throw new Error('no free sequence in the context');
    this.created++;
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    return new FakeSequence(this);
  }

  dispose(): Promise<void> {
    this.disposed = true;
    return Promise.resolve();
  }
}

class FakeSequence implements LlamaSequence {
  private disposed = false;
  readonly contextTokens: Token[] = [];

  constructor(private readonly model: FakeModel) {}

  keepPrefixOf(tokens: readonly Token[]): Promise<number> {
    let kept = 0;
    while (
      kept < Math.min(tokens.length, this.contextTokens.length) &&
      tokens[kept] === this.contextTokens[kept]
    )
      kept++;
    this.contextTokens.length = kept;
    return Promise.resolve(kept);
  }

  async *evaluate(tokens: Token[], options: EvaluateOptions): AsyncGenerator<GeneratedToken, void, void> {
    this.model.evaluations.push(options);
    this.model.appended.push(this.model.detokenize(tokens));
    this.contextTokens.push(...tokens);
    // A yielded token enters the sequence only when the generation continues past it.
    let last: Token | null = null;
    const generated = (token: Token): GeneratedToken => {
      if (last !== null) this.contextTokens.push(last);
      last = token;
      return withProbabilities(token);
    };
    const withProbabilities = (token: Token): GeneratedToken =>
      options.probabilities === true
        ? {
            token,
            probabilities: new Map([
              [token, 0.5],
              [0x21 as Token, 0.25],
              [0x22 as Token, 0.125],
            ]),
          }
        : { token };
    if (options.grammar !== undefined) {
      for (const token of tokensOf(this.model.grammarOutput(options.grammar))) {
        await nextTurn();
        yield generated(token);
      }
      return;
    }
    const { text, endless, tail } = this.model.script(options.seed);
    do {
      for (const token of tokensOf(text)) {
        await nextTurn();
        yield generated(token);
      }
    } while (endless);
    for (const token of tail ?? []) yield generated(token);
  }

  dispose(): Promise<void> {
    if (!this.disposed) {
      this.disposed = true;
      this.model.active--;
      this.model.disposedSequences++;
    }
    return Promise.resolve();
  }
}

const OPTIONS: LlamaCppOptions = {
  modelPath: '/models/fake.gguf',
  contextSize: null,
  sequences: 2,
  threads: 0,
  gpuLayers: 0,
  batchSize: null,
};

function request(over: Partial<ChatInferenceRequest> = {}): ChatInferenceRequest {
  return chatInferenceRequest({ messages: [{ role: 'user', content: 'hi' }], ...over });
}

async function backendWith(model: FakeModel, options: Partial<LlamaCppOptions> = {}) {
  model.capacity = options.sequences ?? OPTIONS.sequences;
  const loader = jest.fn(() => Promise.resolve(model));
  const backend = new LlamaCppChatBackend('fake', { ...OPTIONS, ...options }, loader);
  await backend.load();
  return { backend, loader };
}

async function collect(
  iterable: AsyncIterable<ChatInferenceEvent>,
): Promise<{ events: ChatInferenceEvent[]; texts: string[] }> {
  const events: ChatInferenceEvent[] = [];
  for await (const event of iterable) events.push(event);
  const texts: string[] = [];
  for (const event of events)
    if (event.type === 'delta') texts[event.choice] = (texts[event.choice] ?? '') + event.text;
  return { events, texts };
}

const never = () => new AbortController().signal;
const PROMPT_TOKENS = 'user:hi\nmodel:'.length;

describe('LlamaCppChatBackend', () => {
  it('streams one delta per token, stops at max_tokens with length, and counts usage', async () => {
    const model = new FakeModel(4096, () => ({ text: 'abcdefgh' }));
    const { backend } = await backendWith(model);

    const { events } = await collect(backend.generate(request({ maxTokens: 5 }), never()));

    expect(events).toEqual([
      ...[...'abcde'].map((text) => ({ type: 'delta', choice: 0, text })),
      { type: 'finish', choice: 0, reason: 'length' },
      { type: 'usage', promptTokens: PROMPT_TOKENS, completionTokens: 5 },
    ]);
    // The sequence is kept, with its KV cache, for the next prompt.
    expect([model.created, model.active, model.disposedSequences]).toEqual([1, 1, 0]);
  });

  it('keeps a conversation on its sequence: its next turn evaluates only the new tokens', async () => {
    const model = new FakeModel(4096, () => ({ text: 'ok' }));
    const { backend } = await backendWith(model, { sequences: 2 });
    const first = [
      { role: 'system' as const, content: 'You are a terse assistant.' },
      { role: 'user' as const, content: 'hi' },
    ];

    await collect(backend.generate(request({ messages: first }), never()));
    const firstPrompt = model.appended[0]!;
    expect(firstPrompt).toBe('system:You are a terse assistant.\nuser:hi\nmodel:');
    // Another conversation meanwhile takes the other sequence, evicting nothing.
    const other = [
      { role: 'system' as const, content: 'Another assistant, another prompt.' },
      { role: 'user' as const, content: 'yo' },
    ];
    await collect(backend.generate(request({ messages: other }), never()));
    expect(model.appended[1]).toBe('system:Another assistant, another prompt.\nuser:yo\nmodel:');

    const second = [
      ...first,
      { role: 'assistant' as const, content: 'ok' },
      { role: 'user' as const, content: 'more' },
    ];
    const { events } = await collect(backend.generate(request({ messages: second }), never()));
    expect(model.appended[2]).toBe('user:more\nmodel:');
    // Usage still counts the whole prompt.
    expect(events.at(-1)).toMatchObject({ promptTokens: firstPrompt.length + 'user:more\nmodel:'.length });
    // The same prompt again: only its last token is evaluated, for the logits of the first generated one.
    await collect(backend.generate(request({ messages: first }), never()));
    expect(model.appended[3]).toBe(':');

    expect(model.created).toBe(2);
    expect(backend.promptReuse).toEqual({
      choices: 4,
      reusedPromptTokens: firstPrompt.length + (firstPrompt.length - 1),
    });
  });

  it('finishes with stop when the model ends its turn by itself', async () => {
    const model = new FakeModel(4096, () => ({ text: 'done' }));
    const { backend } = await backendWith(model);

    const { events, texts } = await collect(backend.generate(request(), never()));

    expect(texts).toEqual(['done']);
    expect(events.at(-2)).toEqual({ type: 'finish', choice: 0, reason: 'stop' });
    expect(events.at(-1)).toEqual({ type: 'usage', promptTokens: PROMPT_TOKENS, completionTokens: 4 });
  });

  it('cuts at a stop sequence spread over several tokens and never sends it', async () => {
    const model = new FakeModel(4096, () => ({ text: 'hello STOP there' }));
    const { backend } = await backendWith(model);

    const { events, texts } = await collect(backend.generate(request({ stop: ['STOP'] }), never()));

    expect(texts).toEqual(['hello ']);
    expect(events.at(-2)).toEqual({ type: 'finish', choice: 0, reason: 'stop' });
    // Generated up to the token that completed the stop sequence.
    expect(events.at(-1)).toMatchObject({ completionTokens: 'hello STOP'.length });
  });

  it("stops at the chat template's end-of-turn markers, text or special token", async () => {
    const special = new FakeModel(4096, () => ({ text: 'ok', tail: [END_OF_TURN, 120 as Token] }));
    expect((await collect((await backendWith(special)).backend.generate(request(), never()))).texts).toEqual([
      'ok',
    ]);
    const text = new FakeModel(4096, () => ({ text: 'ok<|end|>more' }));
    const { events, texts } = await collect((await backendWith(text)).backend.generate(request(), never()));
    expect(texts).toEqual(['ok']);
    expect(events.at(-2)).toEqual({ type: 'finish', choice: 0, reason: 'stop' });
  });

  it('ends with length when the context is full, and refuses a prompt that does not fit', async () => {
    const model = new FakeModel(PROMPT_TOKENS + 3, () => ({ text: 'abcdef' }));
    const { backend } = await backendWith(model);

    const { events } = await collect(backend.generate(request({ maxTokens: 100 }), never()));
    expect(events.at(-2)).toEqual({ type: 'finish', choice: 0, reason: 'length' });
    expect(events.at(-1)).toMatchObject({ completionTokens: 3 });

    const long = request({ messages: [{ role: 'user', content: 'far too long for this context' }] });
    const error = await collect(backend.generate(long, never())).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({ status: 400, code: 'context_length_exceeded', param: 'messages' });
  });

  it('generates n choices on their own sequences, seeded seed + i, within the pool size', async () => {
    const model = new FakeModel(4096, (seed) => ({ text: `s${seed}` }));
    const { backend } = await backendWith(model, { sequences: 2 });

    const { events, texts } = await collect(backend.generate(request({ n: 3, seed: 40 }), never()));

    expect(texts).toEqual(['s40', 's41', 's42']);
    expect(
      events
        .filter((e) => e.type === 'finish')
        .map((e) => e.choice)
        .sort(),
    ).toEqual([0, 1, 2]);
    expect(events.at(-1)).toEqual({ type: 'usage', promptTokens: PROMPT_TOKENS, completionTokens: 9 });
    // Never more sequences than configured: the third choice runs on a sequence the others gave back.
    expect(model.maxActive).toBe(2);
    expect(model.created).toBe(2);
  });

  it('maps sampling parameters, with penalties over the generated tokens only when asked', async () => {
    const model = new FakeModel(4096, () => ({ text: 'abc' }));
    const { backend } = await backendWith(model);

    await collect(backend.generate(request({ temperature: 0.3, topP: 0.9, seed: 7 }), never()));
    expect(model.evaluations[0]).toEqual({ temperature: 0.3, topP: 0.9, seed: 7, probabilities: false });

    await collect(backend.generate(request({ presencePenalty: 0.5, frequencyPenalty: -0.25 }), never()));
    const penalty = model.evaluations[1]!.repeatPenalty!;
    expect(penalty).toMatchObject({ penalty: 1, presencePenalty: 0.5, frequencyPenalty: -0.25 });
    expect(typeof penalty.punishTokens === 'function' && penalty.punishTokens()).toEqual(tokensOf('abc'));
    expect(model.evaluations[1]!.seed).toEqual(expect.any(Number));
  });

  it('stops promptly on abort, throws the reason and gives every sequence back', async () => {
    const model = new FakeModel(1_000_000, () => ({ text: 'x', endless: true }));
    const { backend } = await backendWith(model, { sequences: 2 });
    const controller = new AbortController();
    const reason = new Error('client went away');

    let deltas = 0;
    const run = (async () => {
      for await (const event of backend.generate(request({ n: 2 }), controller.signal)) {
        if (event.type === 'delta' && ++deltas === 10) controller.abort(reason);
      }
    })();

    await expect(run).rejects.toBe(reason);
    expect(deltas).toBeLessThan(20);
    // A stopped sequence is consistent: both are kept.
    expect([model.active, model.disposedSequences]).toEqual([2, 0]);
    // Both sequences are free again: a request needing both runs at once.
    const { texts } = await collect(
      backend.generate(request({ n: 2, maxTokens: 2 }), AbortSignal.timeout(10_000)),
    );
    expect(texts).toEqual(['xx', 'xx']);
  });

  it('frees the sequences of a waiting choice and of running ones when the caller stops early', async () => {
    const model = new FakeModel(1_000_000, () => ({ text: 'y', endless: true }));
    const { backend } = await backendWith(model, { sequences: 1 });

    for await (const event of backend.generate(request({ n: 2 }), never())) {
      if (event.type === 'delta') break;
    }

    expect([model.created, model.disposedSequences]).toEqual([1, 0]);
    // The one sequence is free again.
    const { texts } = await collect(backend.generate(request({ maxTokens: 2 }), AbortSignal.timeout(10_000)));
    expect(texts).toEqual(['yy']);
  });

  it('loads once, refuses to generate before loading, and disposes the model on close', async () => {
    const model = new FakeModel(4096, () => ({ text: 'a' }));
    const loader = jest.fn(() => Promise.resolve(model));
    const backend = new LlamaCppChatBackend('fake', OPTIONS, loader);

    await expect(collect(backend.generate(request(), never()))).rejects.toThrow('not loaded');
    await Promise.all([backend.load(), backend.load()]);
    expect(loader).toHaveBeenCalledTimes(1);
    expect(backend.describe()).toBe('fake');
    await backend.close();
    expect(model.disposed).toBe(true);
  });

  describe('tools, structured outputs and logprobs', () => {
    const weather: ToolDefinition = {
      name: 'get_weather',
      description: 'Weather of a city',
      strict: true,
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' } },
        required: ['city'],
        additionalProperties: false,
      },
    };
    const time: ToolDefinition = {
      name: 'get_time',
      strict: false,
      parameters: { type: 'object', properties: { zone: { type: 'string' } } },
    };
    const WEATHER_GRAMMAR = `json ${JSON.stringify({
      type: 'object',
      properties: { city: { type: 'string' } },
      additionalProperties: false,
    })}`;
    const callEvents = (events: ChatInferenceEvent[]) => events.filter((e) => e.type.startsWith('tool-call'));
    const argumentsOf = (events: ChatInferenceEvent[]) =>
      events.map((e) => (e.type === 'tool-call-arguments' ? e.fragment : '')).join('');

    it('forces a call of the named function: prefix and name written, arguments from its schema grammar', async () => {
      const model = new FakeModel(4096, () => ({ text: 'never used' }));
      model.grammarOutput = (grammar) =>
        grammar.label === WEATHER_GRAMMAR ? '{"city": "Paris"}\n\n' : 'wrong';
      const { backend } = await backendWith(model);

      const { events } = await collect(
        backend.generate(
          request({ tools: [weather, time], toolChoice: { type: 'function', name: 'get_weather' } }),
          never(),
        ),
      );

      expect(events.filter((e) => e.type === 'delta')).toEqual([]);
      expect(events[0]).toEqual({
        type: 'tool-call-start',
        choice: 0,
        index: 0,
        id: expect.stringMatching(/^call_[\w-]{16}$/) as unknown,
        name: 'get_weather',
      });
      expect(events.filter((e) => e.type === 'tool-call-arguments').length).toBeGreaterThan(1);
      // Trailing whitespace the JSON grammar allows is not part of the arguments.
      expect(argumentsOf(events)).toBe('{"city": "Paris"}');
      expect(events.at(-2)).toEqual({ type: 'finish', choice: 0, reason: 'tool_calls' });
      // Both functions are documented in the prompt, which counts as prompt tokens.
      expect(Object.keys(model.renderedFunctions[0]!)).toEqual(['get_weather', 'get_time']);
      expect(events.at(-1)).toEqual({
        type: 'usage',
        promptTokens: expect.any(Number) as unknown,
        completionTokens: '{"city": "Paris"}\n\n'.length,
      });
      expect((events.at(-1) as { promptTokens: number }).promptTokens).toBeGreaterThan(PROMPT_TOKENS + 50);
      // One evaluation: prompt, then the call prefix, the name and the params prefix the backend wrote.
      expect(model.appended).toHaveLength(1);
      expect(model.appended[0]!.endsWith('model:||call: get_weather<get_weather>(')).toBe(true);
      expect(model.evaluations[0]!.grammar).toEqual({ label: WEATHER_GRAMMAR });
    });

    it("counts a prompt as a generation's usage does, tools and answer format included, with no sequence", async () => {
      const model = new FakeModel(4096, () => ({ text: 'ok' }));
      const { backend } = await backendWith(model);
      const asks = [
        request(),
        request({ tools: [weather, time], toolChoice: { type: 'auto' } }),
        request({ tools: [weather, time], toolChoice: { type: 'none' } }),
        request({ responseFormat: { type: 'json_object' } }),
      ];
      const counts: number[] = [];
      for (const ask of asks) {
        model.maxActive = 0;
        const count = await backend.countPromptTokens(ask, never());
        expect(model.maxActive).toBe(0);
        const { events } = await collect(backend.generate(ask, never()));
        expect(events.at(-1)).toMatchObject({ type: 'usage', promptTokens: count });
        counts.push(count);
      }
      expect(counts[0]).toBe(PROMPT_TOKENS);
      expect(counts[1]).toBeGreaterThan(PROMPT_TOKENS + 50);
      expect(counts[2]).toBe(PROMPT_TOKENS);
      expect(counts[3]).toBeGreaterThan(PROMPT_TOKENS);
      // A schema the grammar cannot enforce is the same 400 a generation answers.
      const unenforceable = request({
        tools: [{ ...time, strict: true, parameters: { type: 'object', properties: { n: { minimum: 3 } } } }],
        toolChoice: { type: 'auto' },
      });
      await expect(backend.countPromptTokens(unenforceable, never())).rejects.toMatchObject({
        status: 400,
        param: 'tools[0].function.parameters',
      });
      const aborted = new AbortController();
      aborted.abort(new Error('gone'));
      await expect(backend.countPromptTokens(request(), aborted.signal)).rejects.toThrow('gone');
    });

    it('with tool_choice required and several tools, lets a grammar over the names pick one', async () => {
      const model = new FakeModel(4096, () => ({ text: 'never used' }));
      model.grammarOutput = (grammar) =>
        grammar.label === 'one of get_weather|get_time' ? 'get_time' : '{}';
      const { backend } = await backendWith(model);

      const { events } = await collect(
        backend.generate(request({ tools: [weather, time], toolChoice: { type: 'required' } }), never()),
      );

      expect(callEvents(events)).toEqual([
        expect.objectContaining({ type: 'tool-call-start', name: 'get_time' }),
        { type: 'tool-call-arguments', choice: 0, index: 0, fragment: '{' },
        { type: 'tool-call-arguments', choice: 0, index: 0, fragment: '}' },
      ]);
      expect(model.appended).toEqual([expect.stringMatching(/model:\|\|call: $/), '<get_time>(']);
      expect(events.at(-1)).toMatchObject({ completionTokens: 'get_time{}'.length });
    });

    it('disposes of a sequence whose generation failed, and starts the next prompt on a new one', async () => {
      const model = new FakeModel(4096, () => ({ text: 'x' }));
      model.grammarOutput = (grammar) => (grammar.label.startsWith('one of') ? 'get_nothing' : '{}');
      const { backend } = await backendWith(model, { sequences: 1 });

      await expect(
        collect(
          backend.generate(request({ tools: [weather, time], toolChoice: { type: 'required' } }), never()),
        ),
      ).rejects.toThrow('the name grammar produced');
      expect([model.created, model.disposedSequences]).toEqual([1, 1]);

      const { texts } = await collect(backend.generate(request(), never()));
      expect(texts).toEqual(['x']);
      expect(model.created).toBe(2);
      expect(model.appended.at(-1)).toBe('user:hi\nmodel:');
    });

    it('in auto, sends the text before the call, then the call the model opened', async () => {
      const model = new FakeModel(4096, () => ({ text: 'Let me check.||call: get_weather(and more' }));
      model.grammarOutput = (grammar) =>
        grammar.label === 'one of get_weather|get_time' ? 'get_weather' : '{"city": "Oslo"}';
      const { backend } = await backendWith(model);

      const { events, texts } = await collect(
        backend.generate(request({ tools: [weather, time], toolChoice: { type: 'auto' } }), never()),
      );

      expect(texts).toEqual(['Let me check.']);
      expect(callEvents(events)[0]).toMatchObject({ type: 'tool-call-start', name: 'get_weather' });
      expect(argumentsOf(events)).toBe('{"city": "Oslo"}');
      expect(events.at(-2)).toEqual({ type: 'finish', choice: 0, reason: 'tool_calls' });
      // The token that completed the trigger ("||call:") enters the sequence before the name is chosen.
      expect(model.appended.slice(1)).toEqual([':', '<get_weather>(']);
      // The name is chosen under a grammar of the offered names, the arguments under the function's schema.
      expect(model.evaluations.map((e) => e.grammar?.label)).toEqual([
        undefined,
        'one of get_weather|get_time',
        WEATHER_GRAMMAR,
      ]);
    });

    it('in auto, opens a call at the special token that starts one, and writes the rest of its prefix', async () => {
      const model = new FakeModel(4096, () => ({ text: 'ok', tail: [CALL_TOKEN, 120 as Token] }));
      model.grammarOutput = () => '{"zone": "UTC"}';
      const { backend } = await backendWith(model);

      const { events, texts } = await collect(
        backend.generate(request({ tools: [time], toolChoice: { type: 'auto' } }), never()),
      );

      expect(texts).toEqual(['ok']);
      expect(callEvents(events)[0]).toMatchObject({ name: 'get_time' });
      expect(model.appended[1]).toBe('{"name": "get_time<get_time>(');
      expect(argumentsOf(events)).toBe('{"zone": "UTC"}');
    });

    it('in auto, answers in text when the model opens no call', async () => {
      const model = new FakeModel(4096, () => ({ text: 'It is sunny | nice.' }));
      const { backend } = await backendWith(model);

      const { events, texts } = await collect(
        backend.generate(request({ tools: [weather], toolChoice: { type: 'auto' } }), never()),
      );

      expect(texts).toEqual(['It is sunny | nice.']);
      expect(callEvents(events)).toEqual([]);
      expect(events.at(-2)).toEqual({ type: 'finish', choice: 0, reason: 'stop' });
    });

    it('with tool_choice none, offers no function and treats call syntax as text', async () => {
      const model = new FakeModel(4096, () => ({ text: 'a ||call: get_weather' }));
      const { backend } = await backendWith(model);

      const { events, texts } = await collect(
        backend.generate(request({ tools: [weather], toolChoice: { type: 'none' } }), never()),
      );

      expect(model.renderedFunctions).toEqual([undefined]);
      expect(texts).toEqual(['a ||call: get_weather']);
      expect(callEvents(events)).toEqual([]);
    });

    it('ends a call cut by max_tokens with length', async () => {
      const model = new FakeModel(4096, () => ({ text: '' }));
      model.grammarOutput = () => '{"city": "Reykjavik"}';
      const { backend } = await backendWith(model);

      const { events } = await collect(
        backend.generate(
          request({ tools: [weather], toolChoice: { type: 'required' }, maxTokens: 5 }),
          never(),
        ),
      );

      expect(argumentsOf(events)).toBe('{"cit');
      expect(events.at(-2)).toEqual({ type: 'finish', choice: 0, reason: 'length' });
    });

    it('constrains the answer with a JSON grammar for json_object and json_schema', async () => {
      const model = new FakeModel(4096, () => ({ text: 'not json' }));
      model.grammarOutput = (grammar) => (grammar.label === 'json' ? '{"a": 1}' : '{"city": "Rome"}');
      const { backend } = await backendWith(model);

      const object = await collect(
        backend.generate(request({ responseFormat: { type: 'json_object' } }), never()),
      );
      expect(object.texts).toEqual(['{"a": 1}']);
      // The instruction is part of the prompt, so it counts as prompt tokens.
      expect(object.events.at(-1)).toMatchObject({
        promptTokens: PROMPT_TOKENS + 'system:Respond with a JSON object.\n'.length,
      });
      expect(model.evaluations[0]!.grammar).toEqual({ label: 'json' });

      const schema = await collect(
        backend.generate(
          request({
            responseFormat: { type: 'json_schema', name: 'w', strict: true, schema: weather.parameters },
          }),
          never(),
        ),
      );
      expect(schema.texts).toEqual(['{"city": "Rome"}']);
      expect(model.evaluations[1]!.grammar).toEqual({ label: WEATHER_GRAMMAR });
      expect(schema.events.at(-2)).toEqual({ type: 'finish', choice: 0, reason: 'stop' });
    });

    it('refuses a schema the grammar cannot enforce with a 400 naming the field, before any output', async () => {
      const model = new FakeModel(4096, () => ({ text: 'x' }));
      const { backend } = await backendWith(model);
      const unenforceable = { type: 'object', properties: { n: { type: 'number', minimum: 3 } } };

      const format = await collect(
        backend.generate(
          request({
            responseFormat: { type: 'json_schema', name: 'n', strict: true, schema: unenforceable },
          }),
          never(),
        ),
      ).catch((e: unknown) => e);
      expect(format).toBeInstanceOf(GatewayError);
      expect(format).toMatchObject({ status: 400, param: 'response_format.json_schema.schema' });
      expect((format as Error).message).toContain('properties.n.minimum');

      const tool = await collect(
        backend.generate(
          request({
            tools: [weather, { ...time, strict: true, parameters: unenforceable }],
            toolChoice: { type: 'auto' },
          }),
          never(),
        ),
      ).catch((e: unknown) => e);
      expect(tool).toMatchObject({ status: 400, param: 'tools[1].function.parameters' });
      expect(model.disposedSequences).toBe(0);
    });

    it('refuses a schema llama.cpp cannot compile with a 400 naming the field', async () => {
      const model = new FakeModel(4096, () => ({ text: 'x' }));
      const { backend } = await backendWith(model);
      const broken = { ...time, parameters: { $ref: '#/$defs/missing' } };

      const error = await collect(
        backend.generate(request({ tools: [broken], toolChoice: { type: 'required' } }), never()),
      ).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(GatewayError);
      expect(error).toMatchObject({ status: 400, param: 'tools[0].function.parameters' });
      expect((error as Error).message).toContain('no such definition');
    });

    it('forces a call in each of n choices, each on its own sequence with its own id', async () => {
      const model = new FakeModel(4096, () => ({ text: 'never used' }));
      model.grammarOutput = () => '{"zone": "UTC"}';
      const { backend } = await backendWith(model, { sequences: 2 });

      const { events } = await collect(
        backend.generate(request({ n: 3, tools: [time], toolChoice: { type: 'required' } }), never()),
      );

      const starts = events.filter((e) => e.type === 'tool-call-start');
      expect(starts.map((e) => e.choice).sort()).toEqual([0, 1, 2]);
      expect(new Set(starts.map((e) => e.id)).size).toBe(3);
      expect(events.filter((e) => e.type === 'finish').map((e) => e.reason)).toEqual([
        'tool_calls',
        'tool_calls',
        'tool_calls',
      ]);
      expect([model.maxActive, model.created]).toEqual([2, 2]);
    });

    it('stops promptly on abort while generating arguments, and gives the sequence back', async () => {
      const model = new FakeModel(4096, () => ({ text: 'never used' }));
      model.grammarOutput = () => `{"zone": "${'z'.repeat(10_000)}"}`;
      const { backend } = await backendWith(model);
      const controller = new AbortController();
      const reason = new Error('client went away');

      let fragments = 0;
      const run = (async () => {
        for await (const event of backend.generate(
          request({ tools: [time], toolChoice: { type: 'required' } }),
          controller.signal,
        )) {
          if (event.type === 'tool-call-arguments' && ++fragments === 5) controller.abort(reason);
        }
      })();

      await expect(run).rejects.toBe(reason);
      expect(fragments).toBeLessThan(20);
      // Both sequences are free again: a request needing both runs at once.
      const { texts } = await collect(
        backend.generate(request({ n: 2, maxTokens: 2 }), AbortSignal.timeout(10_000)),
      );
      expect(texts).toEqual(['ne', 'ne']);
    });

    it("attaches each token's logprob and its top alternatives to the delta it produced", async () => {
      const model = new FakeModel(4096, () => ({ text: 'ab' }));
      const { backend } = await backendWith(model);

      const { events } = await collect(
        backend.generate(request({ logprobs: true, topLogprobs: 2 }), never()),
      );

      expect(model.evaluations[0]!.probabilities).toBe(true);
      expect(events.filter((e) => e.type === 'delta')).toEqual([
        {
          type: 'delta',
          choice: 0,
          text: 'a',
          logprobs: [
            {
              token: 'a',
              logprob: Math.log(0.5),
              bytes: [0x61],
              top_logprobs: [
                { token: 'a', logprob: Math.log(0.5), bytes: [0x61] },
                { token: '!', logprob: Math.log(0.25), bytes: [0x21] },
              ],
            },
          ],
        },
        expect.objectContaining({ text: 'b', logprobs: [expect.objectContaining({ token: 'b' })] }),
      ]);
    });

    it('renders a tool loop (call, result) and continues the model turn after the result', async () => {
      const model = new FakeModel(4096, () => ({ text: 'It is 21.' }));
      const { backend } = await backendWith(model);

      const { events, texts } = await collect(
        backend.generate(
          request({
            tools: [weather],
            toolChoice: { type: 'auto' },
            messages: [
              { role: 'user', content: 'Weather in Paris?' },
              {
                role: 'assistant',
                content: null,
                toolCalls: [
                  {
                    id: 'call_1',
                    type: 'function',
                    function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
                  },
                ],
              },
              { role: 'tool', toolCallId: 'call_1', content: '21 degrees' },
            ],
          }),
          never(),
        ),
      );

      expect(texts).toEqual(['It is 21.']);
      expect(events.at(-2)).toEqual({ type: 'finish', choice: 0, reason: 'stop' });
    });
  });
});
