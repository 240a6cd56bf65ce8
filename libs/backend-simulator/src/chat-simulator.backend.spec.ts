import Ajv, { type AnySchema } from 'ajv';
import addFormats from 'ajv-formats';
import { encode } from 'gpt-tokenizer';
import {
  type ChatInferenceEvent,
  type ChatInferenceRequest,
  countPromptTokens,
  countTextTokens,
  IMAGE_PART_TOKENS,
  type JsonSchema,
  type ToolDefinition,
} from '@mgw/inference';
import { GatewayError } from '@mgw/contracts';
import { ChatSimulatorBackend, tokenSegments } from './chat-simulator.backend';
import type { ChatSimulatorOptions } from './simulator.options';
import { chatInferenceRequest } from '@mgw/testing';

const countTokens = (text: string) => encode(text, { disallowedSpecial: new Set() }).length;

function chatRequest(overrides: Partial<ChatInferenceRequest> = {}): ChatInferenceRequest {
  return chatInferenceRequest({
    messages: [{ role: 'user', content: 'Hello there, simulator! Please repeat this sentence.' }],
    ...overrides,
  });
}

function backend(options: Partial<ChatSimulatorOptions> = {}): ChatSimulatorBackend {
  return new ChatSimulatorBackend({
    mode: 'echo',
    ttftMs: 0,
    tokensPerSecond: 0,
    maxWords: 48,
    failAfterTokens: 0,
    ...options,
  });
}

async function collect(
  simulator: ChatSimulatorBackend,
  request: ChatInferenceRequest,
  signal = new AbortController().signal,
): Promise<ChatInferenceEvent[]> {
  const events: ChatInferenceEvent[] = [];
  for await (const event of simulator.generate(request, signal)) events.push(event);
  return events;
}

interface Summary {
  texts: string[];
  deltas: number[];
  finishes: Array<ChatInferenceEvent & { type: 'finish' }>;
  usage: ChatInferenceEvent & { type: 'usage' };
}

/** Checks the event-stream invariants every request must satisfy, then summarises per choice. */
function summarise(events: ChatInferenceEvent[], n: number): Summary {
  const texts = new Array<string>(n).fill('');
  const deltas = new Array<number>(n).fill(0);
  const finishes: Summary['finishes'] = [];
  const finished = new Set<number>();
  events.forEach((event, position) => {
    if (event.type === 'usage') {
      expect(position).toBe(events.length - 1);
      return;
    }
    expect(event.choice).toBeGreaterThanOrEqual(0);
    expect(event.choice).toBeLessThan(n);
    expect(finished.has(event.choice)).toBe(false);
    if (event.type === 'delta') {
      expect(event.text.length).toBeGreaterThan(0);
      texts[event.choice] += event.text;
      deltas[event.choice] = (deltas[event.choice] ?? 0) + 1;
    } else if (event.type === 'finish') {
      finished.add(event.choice);
      finishes.push(event);
    }
  });
  expect(finishes).toHaveLength(n);
  expect(events.filter((event) => event.type === 'usage')).toHaveLength(1);
  const usage = events.at(-1);
  if (usage?.type !== 'usage') throw new Error('usage must come last');
  return { texts, deltas, finishes, usage };
}

const reasonOf = (summary: Summary, choice: number) =>
  summary.finishes.find((f) => f.choice === choice)?.reason;

describe('ChatSimulatorBackend', () => {
  describe('echo mode', () => {
    it('echoes the last user message, one token per delta', async () => {
      const text = 'Hello there, simulator! Please repeat this sentence.';
      const request = chatRequest({
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'An earlier question' },
          { role: 'assistant', content: 'An earlier answer' },
          { role: 'user', content: text },
        ],
      });
      const summary = summarise(await collect(backend(), request), 1);
      expect(summary.texts[0]).toBe(text);
      expect(summary.deltas[0]).toBe(countTokens(text));
      expect(reasonOf(summary, 0)).toBe('stop');
      expect(summary.usage.completionTokens).toBe(countTokens(text));
    });

    it('echoes the concatenated text parts of a content-part array', async () => {
      const request = chatRequest({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Describe ' },
              { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
              { type: 'text', text: 'this picture.' },
            ],
          },
        ],
      });
      expect(summarise(await collect(backend(), request), 1).texts[0]).toBe('Describe this picture.');
    });

    it('answers with a fixed sentence when there is no user text', async () => {
      const request = chatRequest({ messages: [{ role: 'system', content: 'You are a test.' }] });
      const text = summarise(await collect(backend(), request), 1).texts[0];
      expect(text?.length).toBeGreaterThan(0);
      const imageOnly = chatRequest({
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AA' } }] },
        ],
      });
      expect(summarise(await collect(backend(), imageOnly), 1).texts[0]).toBe(text);
    });

    it('never splits a multi-byte character across deltas', async () => {
      const text = 'Wave 👋🏽, say 你好, café, naïve — done.';
      const summary = summarise(
        await collect(backend(), chatRequest({ messages: [{ role: 'user', content: text }] })),
        1,
      );
      expect(summary.texts[0]).toBe(text);
      const pieces = tokenSegments(text);
      expect(pieces.map((piece) => piece.text).join('')).toBe(text);
      expect(pieces.some((piece) => piece.tokens > 1)).toBe(true);
      for (const piece of pieces) expect(piece.text).not.toContain('\uFFFD');
      expect(pieces.reduce((sum, piece) => sum + piece.tokens, 0)).toBe(countTokens(text));
    });

    it('treats special-token text in the prompt as plain text', async () => {
      const text = 'print("<|endoftext|>")';
      const summary = summarise(
        await collect(backend(), chatRequest({ messages: [{ role: 'user', content: text }] })),
        1,
      );
      expect(summary.texts[0]).toBe(text);
      expect(summary.usage.promptTokens).toBeGreaterThan(0);
    });
  });

  describe('words mode', () => {
    const words = backend({ mode: 'words', maxWords: 30 });
    const textOf = async (request: ChatInferenceRequest, n = request.n) =>
      summarise(await collect(words, request), n).texts;

    it('produces maxWords words ending with a period', async () => {
      const [text] = await textOf(chatRequest({ seed: 1 }));
      expect(text).toMatch(/^[A-Z][a-z]* [^]*\.$/);
      expect(text?.split(' ')).toHaveLength(30);
    });

    it('is deterministic for a seed and differs across seeds', async () => {
      const a = await textOf(chatRequest({ seed: 42 }));
      const b = await textOf(chatRequest({ seed: 42 }));
      const c = await textOf(chatRequest({ seed: 43 }));
      expect(a).toEqual(b);
      expect(a).not.toEqual(c);
    });

    it('without a seed is deterministic per conversation', async () => {
      const a = await textOf(chatRequest());
      expect(await textOf(chatRequest())).toEqual(a);
      expect(
        await textOf(chatRequest({ messages: [{ role: 'user', content: 'Something else' }] })),
      ).not.toEqual(a);
    });

    it('gives each choice its own stream', async () => {
      const texts = await textOf(chatRequest({ seed: 5, n: 3 }));
      expect(new Set(texts).size).toBe(3);
    });

    it('at temperature 0 ignores the seed and gives every choice the same text', async () => {
      const a = await textOf(chatRequest({ temperature: 0, seed: 1, n: 3 }));
      const b = await textOf(chatRequest({ temperature: 0, seed: 999, n: 3 }));
      expect(new Set(a).size).toBe(1);
      expect(a).toEqual(b);
      const other = await textOf(
        chatRequest({ temperature: 0, messages: [{ role: 'user', content: 'Other' }] }),
      );
      expect(other[0]).not.toBe(a[0]);
    });

    it('with a small top_p draws only from the most common words', async () => {
      // ceil(0.01 × vocabulary) = 3: "the", "be", "to".
      const [text] = await textOf(chatRequest({ topP: 0.01, seed: 3 }));
      const used = new Set(text?.toLowerCase().replace(/\./g, '').split(' '));
      expect([...used].every((word) => ['the', 'be', 'to'].includes(word))).toBe(true);
    });
  });

  describe('choices, limits and usage', () => {
    it('interleaves n choices round-robin, each with exactly one finish and usage last', async () => {
      const events = await collect(backend({ mode: 'words', maxWords: 12 }), chatRequest({ n: 3, seed: 9 }));
      const summary = summarise(events, 3);
      const firstDeltas = events.filter((event) => event.type === 'delta').slice(0, 6);
      expect(firstDeltas.map((event) => event.choice)).toEqual([0, 1, 2, 0, 1, 2]);
      for (let choice = 0; choice < 3; choice++) expect(reasonOf(summary, choice)).toBe('stop');
    });

    it('stops each choice at max_tokens with finish reason length', async () => {
      const summary = summarise(
        await collect(backend({ mode: 'words' }), chatRequest({ n: 3, seed: 4, maxTokens: 5 })),
        3,
      );
      for (let choice = 0; choice < 3; choice++) {
        expect(summary.deltas[choice]).toBe(5);
        expect(countTokens(summary.texts[choice] ?? '')).toBe(5);
        expect(reasonOf(summary, choice)).toBe('length');
      }
      expect(summary.usage.completionTokens).toBe(15);
    });

    it('reports stop, not length, when the answer ends exactly at max_tokens', async () => {
      const text = 'Short answer.';
      const request = chatRequest({
        messages: [{ role: 'user', content: text }],
        maxTokens: countTokens(text),
      });
      expect(reasonOf(summarise(await collect(backend(), request), 1), 0)).toBe('stop');
    });

    it('truncates before a stop sequence, never emits it, and finishes with stop', async () => {
      const text = 'alpha beta gamma STOP delta epsilon';
      const request = chatRequest({
        messages: [{ role: 'user', content: text }],
        stop: ['STOP', 'never'],
        n: 2,
      });
      const summary = summarise(await collect(backend(), request), 2);
      expect(summary.texts).toEqual(['alpha beta gamma ', 'alpha beta gamma ']);
      expect(reasonOf(summary, 0)).toBe('stop');
      expect(reasonOf(summary, 1)).toBe('stop');
      expect(summary.usage.completionTokens).toBe(2 * countTokens('alpha beta gamma '));
    });

    it('finds a stop sequence that spans several tokens', async () => {
      const text = 'one two three four five';
      const request = chatRequest({ messages: [{ role: 'user', content: text }], stop: ['o three f'] });
      const summary = summarise(await collect(backend(), request), 1);
      expect(summary.texts[0]).toBe('one tw');
      expect(reasonOf(summary, 0)).toBe('stop');
    });

    it('counts completion tokens as the emitted text re-tokenized, summed over choices', async () => {
      const summary = summarise(
        await collect(backend({ mode: 'words' }), chatRequest({ n: 4, seed: 11, stop: ['the'] })),
        4,
      );
      const recount = summary.texts.reduce((sum, text) => sum + countTokens(text), 0);
      expect(summary.usage.completionTokens).toBe(recount);
    });

    it("counts a prompt without generating exactly as a generation's usage reports it", async () => {
      const weather: ToolDefinition = {
        name: 'get_weather',
        strict: false,
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      };
      for (const ask of [chatRequest(), chatRequest({ tools: [weather], toolChoice: { type: 'auto' } })]) {
        const count = await backend().countPromptTokens(ask, new AbortController().signal);
        expect(count).toBe(summarise(await collect(backend(), ask), 1).usage.promptTokens);
      }
      const aborted = new AbortController();
      aborted.abort(new Error('gone'));
      await expect(backend().countPromptTokens(chatRequest(), aborted.signal)).rejects.toThrow('gone');
    });

    it('counts prompt tokens from the chat-formatted messages, plus a flat cost per image', async () => {
      const short = summarise(await collect(backend(), chatRequest()), 1).usage.promptTokens;
      const longer = summarise(
        await collect(
          backend(),
          chatRequest({
            messages: [
              {
                role: 'developer',
                content: 'You are a careful assistant who always answers in full sentences.',
              },
              { role: 'user', content: 'Hello there, simulator! Please repeat this sentence.' },
            ],
          }),
        ),
        1,
      ).usage.promptTokens;
      expect(short).toBeGreaterThan(countTokens('Hello there, simulator! Please repeat this sentence.'));
      expect(longer).toBeGreaterThan(short);

      const withImage = countPromptTokens({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
            ],
          },
        ],
      });
      expect(withImage).toBe(
        countPromptTokens({ messages: [{ role: 'user', content: 'What is this?' }] }) + IMAGE_PART_TOKENS,
      );
    });
  });

  describe('timing and abort', () => {
    it('waits ttftMs before the first token', async () => {
      const started = performance.now();
      const iterator = backend({ ttftMs: 60 }).generate(chatRequest(), new AbortController().signal);
      const first = await iterator[Symbol.asyncIterator]().next();
      expect(first.value).toMatchObject({ type: 'delta' });
      expect(performance.now() - started).toBeGreaterThanOrEqual(55);
      for await (const _event of iterator) {
        // drain
      }
    });

    it('paces tokens at tokensPerSecond', async () => {
      const started = performance.now();
      const summary = summarise(
        await collect(
          backend({ mode: 'words', tokensPerSecond: 200 }),
          chatRequest({ maxTokens: 11, seed: 1 }),
        ),
        1,
      );
      expect(summary.deltas[0]).toBe(11);
      // Ten intervals of 5 ms after the first token.
      expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    });

    // The pacing below is slow on purpose (a token every 10 s): an abort that waited for the next token
    // would take 10 s, so a bound of half that proves promptness however loaded the machine is.
    const SLOW_TOKENS_PER_S = 0.1;
    const PROMPT_MS = 5_000;

    it('stops promptly when aborted mid-stream and throws the abort reason', async () => {
      const controller = new AbortController();
      const reason = new Error('client went away');
      const simulator = backend({ mode: 'words', maxWords: 200, tokensPerSecond: SLOW_TOKENS_PER_S });
      let deltas = 0;
      let abortedAt = 0;
      const consume = async () => {
        for await (const event of simulator.generate(chatRequest({ seed: 1 }), controller.signal)) {
          if (event.type !== 'delta') continue;
          deltas++;
          if (deltas === 1) {
            abortedAt = performance.now();
            controller.abort(reason);
          }
        }
      };
      await expect(consume()).rejects.toBe(reason);
      expect(performance.now() - abortedAt).toBeLessThan(PROMPT_MS);
      expect(deltas).toBe(1);
    });

    it('cuts the time-to-first-token wait short on abort', async () => {
      const controller = new AbortController();
      const started = performance.now();
      const pending = collect(backend({ ttftMs: 10_000 }), chatRequest(), controller.signal);
      setTimeout(() => controller.abort(), 20);
      await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
      expect(performance.now() - started).toBeLessThan(PROMPT_MS);
    });

    it('refuses to start with an already aborted signal', async () => {
      const controller = new AbortController();
      controller.abort(new Error('gone'));
      await expect(collect(backend(), chatRequest(), controller.signal)).rejects.toThrow('gone');
    });

    it('at full speed still lets the event loop run during a long generation', async () => {
      let turns = 0;
      let turnsBeforeEnd = 0;
      const tick = () => {
        turns++;
        timer = setImmediate(tick);
      };
      let timer = setImmediate(tick);
      let deltas = 0;
      try {
        for await (const event of backend({ mode: 'words', maxWords: 4096 }).generate(
          chatRequest({ seed: 2 }),
          new AbortController().signal,
        )) {
          if (event.type === 'delta') deltas++;
          if (event.type === 'usage') turnsBeforeEnd = turns;
        }
      } finally {
        clearImmediate(timer);
      }
      expect(deltas).toBeGreaterThan(4096);
      // One turn per 64 tokens.
      expect(turnsBeforeEnd).toBeGreaterThan(deltas / 64 - 5);
    });

    it('cuts the wait between tokens short on abort', async () => {
      const controller = new AbortController();
      const simulator = backend({ mode: 'words', maxWords: 500, tokensPerSecond: SLOW_TOKENS_PER_S });
      const events: ChatInferenceEvent[] = [];
      let firstEvent!: () => void;
      const gotFirst = new Promise<void>((resolve) => (firstEvent = resolve));
      const pending = (async () => {
        for await (const event of simulator.generate(chatRequest({ seed: 1 }), controller.signal)) {
          events.push(event);
          firstEvent();
        }
      })();
      // The first token comes at once; the second is 10 s away, so the abort lands in that wait.
      await gotFirst;
      const abortedAt = performance.now();
      controller.abort();
      await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
      expect(performance.now() - abortedAt).toBeLessThan(PROMPT_MS);
      expect(events.length).toBe(1);
      expect(events.every((event) => event.type === 'delta')).toBe(true);
    });
  });

  describe('tools', () => {
    const ajv = addFormats(new Ajv({ strict: false }));
    const weather: ToolDefinition = {
      name: 'get_weather',
      description: 'Current weather',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', minLength: 1 },
          unit: { enum: ['celsius', 'fahrenheit'] },
          days: { type: 'integer', minimum: 1, maximum: 7 },
          when: { type: 'string', format: 'date-time' },
        },
        required: ['city', 'unit', 'days', 'when'],
        additionalProperties: false,
      },
      strict: true,
    };
    const search: ToolDefinition = {
      name: 'search_docs',
      parameters: {
        type: 'object',
        properties: { query: { type: 'string' }, limit: { type: 'integer', maximum: 10 } },
        required: ['query'],
      },
      strict: false,
    };
    const ask = (content: string, overrides: Partial<ChatInferenceRequest> = {}) =>
      chatRequest({
        messages: [{ role: 'user', content }],
        tools: [weather, search],
        toolChoice: { type: 'auto' },
        ...overrides,
      });

    interface Call {
      id: string;
      name: string;
      arguments: string;
      fragments: number;
    }
    /** The tool call of each choice, checking that start comes first and only arguments follow. */
    function callsOf(events: ChatInferenceEvent[], n: number): Call[] {
      const calls: Array<Call | undefined> = new Array<Call | undefined>(n).fill(undefined);
      for (const event of events) {
        if (event.type === 'tool-call-start') {
          expect(calls[event.choice]).toBeUndefined();
          expect(event.index).toBe(0);
          calls[event.choice] = { id: event.id, name: event.name, arguments: '', fragments: 0 };
        } else if (event.type === 'tool-call-arguments') {
          const call = calls[event.choice];
          if (call === undefined) throw new Error('arguments before the start of the call');
          expect(event.index).toBe(0);
          call.arguments += event.fragment;
          call.fragments++;
        }
      }
      return calls.map((call) => {
        if (call === undefined) throw new Error('a choice without a tool call');
        return call;
      });
    }

    it('calls the first tool, with valid arguments streamed in token-sized fragments, and no content', async () => {
      const events = await collect(backend(), ask('Tell me something'));
      const summary = summarise(events, 1);
      expect(summary.texts[0]).toBe('');
      expect(reasonOf(summary, 0)).toBe('tool_calls');
      const [call] = callsOf(events, 1);
      expect(call?.name).toBe('get_weather');
      expect(call?.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
      expect(call?.fragments).toBe(countTokens(call?.arguments ?? ''));
      expect(call?.fragments).toBeGreaterThan(3);
      const validate = ajv.compile(weather.parameters as AnySchema);
      expect(validate(JSON.parse(call?.arguments ?? ''))).toBe(true);
      expect(summary.usage.completionTokens).toBe(call?.fragments);
      expect(summary.usage.promptTokens).toBeGreaterThan(
        countPromptTokens({ messages: [{ role: 'user', content: 'Tell me something' }] }),
      );
    });

    it('calls the tool the user names, or the one tool_choice names, and puts the user’s words in strings', async () => {
      const [named] = callsOf(await collect(backend(), ask('Please search_docs for Paris')), 1);
      expect(named?.name).toBe('search_docs');
      expect((JSON.parse(named?.arguments ?? '') as { query: string }).query).toMatch(
        /^(Please|search_docs|for|Paris)( (Please|search_docs|for|Paris))*$/,
      );
      const forced = ask('Please search_docs', { toolChoice: { type: 'function', name: 'get_weather' } });
      expect(callsOf(await collect(backend(), forced), 1)[0]?.name).toBe('get_weather');
      const required = ask('Please search_docs', { toolChoice: { type: 'required' } });
      expect(callsOf(await collect(backend(), required), 1)[0]?.name).toBe('search_docs');
    });

    it('answers in text with tool_choice none', async () => {
      const summary = summarise(await collect(backend(), ask('Hi', { toolChoice: { type: 'none' } })), 1);
      expect(summary.texts[0]).toBe('Hi');
      expect(reasonOf(summary, 0)).toBe('stop');
    });

    it('is deterministic, gives each of n choices its own call id, and interleaves their fragments', async () => {
      const request = ask('weather?', { n: 2, seed: 7 });
      const events = await collect(backend({ mode: 'words' }), request);
      const calls = callsOf(events, 2);
      expect(callsOf(await collect(backend({ mode: 'words' }), request), 2)).toEqual(calls);
      expect(calls[0]?.id).not.toBe(calls[1]?.id);
      const choices = events.filter((event) => event.type === 'tool-call-start').map((event) => event.choice);
      expect(choices).toEqual([0, 1]);
      const summary = summarise(events, 2);
      expect(summary.finishes.map((finish) => finish.reason)).toEqual(['tool_calls', 'tool_calls']);
      const other = callsOf(await collect(backend({ mode: 'words' }), ask('weather?', { n: 2, seed: 8 })), 2);
      expect(other[0]?.id).not.toBe(calls[0]?.id);
    });

    it('finishes with length when max_tokens cuts the arguments', async () => {
      const events = await collect(backend(), ask('weather?', { maxTokens: 3 }));
      const summary = summarise(events, 1);
      expect(reasonOf(summary, 0)).toBe('length');
      expect(callsOf(events, 1)[0]?.fragments).toBe(3);
    });

    it('answers a tool result with text that contains it, in echo and words mode', async () => {
      const messages: ChatInferenceRequest['messages'] = [
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
        { role: 'tool', toolCallId: 'call_1', content: '{"temperature":21}' },
      ];
      for (const mode of ['echo', 'words'] as const) {
        const summary = summarise(
          await collect(
            backend({ mode }),
            chatRequest({ messages, tools: [weather], toolChoice: { type: 'auto' } }),
          ),
          1,
        );
        expect(summary.texts[0]).toContain('The tool returned: {"temperature":21}');
        expect(reasonOf(summary, 0)).toBe('stop');
      }
      // A user turn's text beside its results (the Messages API's tool_result and text blocks) is still
      // that turn: the answer quotes the result instead of calling a tool again.
      const summary = summarise(
        await collect(
          backend({ mode: 'echo' }),
          chatRequest({
            messages: [...messages, { role: 'user', content: 'Thanks, go on.' }],
            tools: [weather],
            toolChoice: { type: 'auto' },
          }),
        ),
        1,
      );
      expect(summary.texts[0]).toContain('The tool returned: {"temperature":21}');
      expect(reasonOf(summary, 0)).toBe('stop');
    });
  });

  describe('response formats', () => {
    const ajv = addFormats(new Ajv({ strict: false }));
    const schema: JsonSchema = {
      type: 'object',
      properties: {
        title: { type: 'string' },
        tags: { type: 'array', items: { type: 'string' }, minItems: 1 },
        score: { type: 'number', minimum: 0, maximum: 1 },
      },
      required: ['title', 'tags', 'score'],
      additionalProperties: false,
    };

    it('answers json_object with a JSON object, as token-sized deltas', async () => {
      for (const mode of ['echo', 'words'] as const) {
        const summary = summarise(
          await collect(backend({ mode }), chatRequest({ responseFormat: { type: 'json_object' } })),
          1,
        );
        const parsed = JSON.parse(summary.texts[0] ?? '') as Record<string, string>;
        expect(Object.values(parsed)[0]).toEqual(expect.any(String));
        expect(summary.deltas[0]).toBe(countTokens(summary.texts[0] ?? ''));
        expect(reasonOf(summary, 0)).toBe('stop');
      }
      const echoed = summarise(
        await collect(backend(), chatRequest({ responseFormat: { type: 'json_object' } })),
        1,
      );
      expect(JSON.parse(echoed.texts[0] ?? '')).toEqual({
        echo: 'Hello there, simulator! Please repeat this sentence.',
      });
    });

    it('answers json_schema with an instance valid against the schema, for each of n choices', async () => {
      const request = chatRequest({
        n: 3,
        seed: 3,
        responseFormat: { type: 'json_schema', name: 'doc', schema, strict: true },
      });
      const summary = summarise(await collect(backend({ mode: 'words' }), request), 3);
      const validate = ajv.compile(schema as AnySchema);
      for (const text of summary.texts) expect(validate(JSON.parse(text))).toBe(true);
      expect(new Set(summary.texts).size).toBeGreaterThan(1);
      expect(summary.usage.promptTokens).toBeGreaterThan(
        summarise(await collect(backend(), chatRequest({ n: 3, seed: 3 })), 3).usage.promptTokens,
      );
    });

    it('cuts the JSON at max_tokens with finish reason length (then it is not valid JSON)', async () => {
      const request = chatRequest({
        maxTokens: 4,
        responseFormat: { type: 'json_schema', name: 'doc', schema, strict: true },
      });
      const summary = summarise(await collect(backend(), request), 1);
      expect(reasonOf(summary, 0)).toBe('length');
      expect(() => JSON.parse(summary.texts[0] ?? '') as unknown).toThrow();
    });
  });

  describe('logprobs', () => {
    const withLogprobs = (overrides: Partial<ChatInferenceRequest> = {}) =>
      chatRequest({ logprobs: true, topLogprobs: 3, ...overrides });

    it('gives every delta one logprob per token that produced it, deterministically', async () => {
      const text = 'Wave 👋🏽, say 你好 — done.';
      const request = withLogprobs({ messages: [{ role: 'user', content: text }] });
      const events = await collect(backend(), request);
      const deltas = events.filter((event) => event.type === 'delta');
      expect(deltas.map((delta) => delta.logprobs?.length)).toEqual(
        tokenSegments(text).map((segment) => segment.tokens),
      );
      const logprobs = deltas.flatMap((delta) => delta.logprobs ?? []);
      expect(logprobs).toHaveLength(countTokens(text));
      for (const delta of deltas) {
        const whole = delta.logprobs?.length === 1 ? delta.logprobs[0] : undefined;
        if (whole !== undefined) {
          expect(whole.token).toBe(delta.text);
          expect(whole.bytes).toEqual([...Buffer.from(delta.text, 'utf8')]);
        }
      }
      const bytes = logprobs.flatMap((logprob) => logprob.bytes ?? []);
      expect(Buffer.from(bytes).toString('utf8')).toBe(text);
      for (const logprob of logprobs) {
        expect(logprob.logprob).toBeLessThanOrEqual(0);
        expect(logprob.top_logprobs).toHaveLength(3);
        expect(logprob.top_logprobs[0]).toEqual({
          token: logprob.token,
          logprob: logprob.logprob,
          bytes: logprob.bytes,
        });
        const values = logprob.top_logprobs.map((top) => top.logprob);
        expect([...values].sort((a, b) => b - a)).toEqual(values);
        expect(new Set(logprob.top_logprobs.map((top) => top.token)).size).toBe(3);
        expect(values.reduce((sum, value) => sum + Math.exp(value), 0)).toBeLessThanOrEqual(1);
      }
      expect(await collect(backend(), request)).toEqual(events);
    });

    it('has empty top_logprobs when none are asked for, and no logprobs at all without logprobs', async () => {
      const none = await collect(backend(), withLogprobs({ topLogprobs: 0 }));
      for (const event of none)
        if (event.type === 'delta') expect(event.logprobs?.[0]?.top_logprobs).toEqual([]);
      const plain = await collect(backend(), chatRequest());
      for (const event of plain) if (event.type === 'delta') expect(event).not.toHaveProperty('logprobs');
    });

    it('holds back the logprobs of text a stop sequence holds, and drops those of text it cuts', async () => {
      const request = withLogprobs({
        messages: [{ role: 'user', content: 'alpha beta gamma STOP delta' }],
        stop: ['STOP'],
      });
      const deltas = (await collect(backend(), request)).filter((event) => event.type === 'delta');
      expect(deltas.map((delta) => delta.text).join('')).toBe('alpha beta gamma ');
      expect(deltas.flatMap((delta) => delta.logprobs ?? []).map((logprob) => logprob.token)).toEqual(
        tokenSegments('alpha beta gamma').map((segment) => segment.text),
      );
    });

    it("keeps each of n interleaved choices' logprobs with its own text", async () => {
      const events = await collect(backend({ mode: 'words', maxWords: 10 }), withLogprobs({ n: 3, seed: 2 }));
      const summary = summarise(events, 3);
      for (let choice = 0; choice < 3; choice++) {
        const tokens = events.flatMap((event) =>
          event.type === 'delta' && event.choice === choice ? (event.logprobs ?? []) : [],
        );
        expect(tokens.map((token) => token.token).join('')).toBe(summary.texts[choice]);
      }
    });

    it('covers content only: a tool call has none', async () => {
      const events = await collect(
        backend(),
        withLogprobs({
          tools: [{ name: 'f', parameters: { type: 'object', properties: {} }, strict: false }],
          toolChoice: { type: 'required' },
        }),
      );
      expect(events.some((event) => event.type === 'delta')).toBe(false);
      expect(events.some((event) => event.type === 'tool-call-arguments')).toBe(true);
    });
  });

  it('fails mid-generation after failAfterTokens deltas when asked to (fault injection)', async () => {
    const events: ChatInferenceEvent[] = [];
    const run = async () => {
      for await (const event of backend({ failAfterTokens: 3 }).generate(
        chatRequest(),
        new AbortController().signal,
      )) {
        events.push(event);
      }
    };
    await expect(run()).rejects.toThrow('simulated backend failure after 3 tokens');
    expect(events.map((e) => e.type)).toEqual(['delta', 'delta', 'delta']);
  });

  describe('long texts and the context window', () => {
    it('echoes a long prompt to every choice in full, split piece by piece and counted once', async () => {
      const text = `${'y'.repeat(5000)} ${'the quick brown fox jumps over the lazy dog '.repeat(300)}`;
      const request = chatRequest({ n: 3, messages: [{ role: 'user', content: text }] });
      const summary = summarise(await collect(backend(), request), 3);
      expect(summary.texts).toEqual([text, text, text]);
      expect(summary.usage.completionTokens).toBe(3 * countTextTokens(text));
      expect(summary.usage.promptTokens).toBe(countPromptTokens(request));
    });

    it('stops a long echo at max_tokens with the tokens it sent', async () => {
      const text = 'word '.repeat(200_000);
      const request = chatRequest({ n: 2, maxTokens: 7, messages: [{ role: 'user', content: text }] });
      const summary = summarise(await collect(backend(), request), 2);
      expect(summary.texts[0]).toBe('word '.repeat(7).trimEnd());
      expect(summary.texts[1]).toBe(summary.texts[0]);
      expect(summary.finishes.map((finish) => finish.reason)).toEqual(['length', 'length']);
      expect(summary.usage.completionTokens).toBe(14);
    });

    it('keeps other work running while it counts a long prompt', async () => {
      let turns = 0;
      let running = true;
      const tick = () => {
        turns++;
        if (running) setImmediate(tick);
      };
      setImmediate(tick);
      // ~1M tokens, ~100 ms of counting with a warm tokenizer: many slices however fast the machine and Node.
      const request = chatRequest({
        maxTokens: 1,
        messages: [{ role: 'user', content: 'lorem ipsum dolor sit amet '.repeat(200_000) }],
      });
      const first = await backend().generate(request, new AbortController().signal).next();
      running = false;
      expect(first.value).toMatchObject({ type: 'delta' });
      expect(turns).toBeGreaterThan(1);
    });

    it('refuses a prompt over the context window with context_length_exceeded', async () => {
      const request = chatRequest({ messages: [{ role: 'user', content: 'many words here '.repeat(100) }] });
      const promptTokens = countPromptTokens(request);
      const fitting = summarise(await collect(backend({ contextTokens: promptTokens }), request), 1);
      expect(fitting.usage.promptTokens).toBe(promptTokens);
      const error = await collect(backend({ contextTokens: promptTokens - 1 }), request).catch(
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(GatewayError);
      expect(error).toMatchObject({ status: 400, code: 'context_length_exceeded', param: 'messages' });
      expect((error as GatewayError).message).toBe(
        `This model's maximum context length is ${promptTokens - 1} tokens. However, your messages resulted in ${promptTokens} tokens. Please reduce the length of the messages.`,
      );
    });
  });

  it('closes', async () => {
    await expect(backend().close()).resolves.toBeUndefined();
  });
});
