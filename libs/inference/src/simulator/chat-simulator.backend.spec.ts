import { encode } from 'gpt-tokenizer';
import type { ChatInferenceEvent, ChatInferenceRequest } from '../chat-backend.interface';
import { countPromptTokens, IMAGE_PART_TOKENS } from '../text/token-count';
import { ChatSimulatorBackend, tokenSegments } from './chat-simulator.backend';
import type { ChatSimulatorOptions } from './simulator.options';

const countTokens = (text: string) => encode(text, { disallowedSpecial: new Set() }).length;

function chatRequest(overrides: Partial<ChatInferenceRequest> = {}): ChatInferenceRequest {
  return {
    messages: [{ role: 'user', content: 'Hello there, simulator! Please repeat this sentence.' }],
    n: 1,
    maxTokens: null,
    stop: [],
    temperature: 1,
    topP: 1,
    presencePenalty: 0,
    frequencyPenalty: 0,
    seed: null,
    user: null,
    tools: [],
    toolChoice: { type: 'none' },
    parallelToolCalls: true,
    responseFormat: { type: 'text' },
    logprobs: false,
    topLogprobs: 0,
    ...overrides,
  };
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

      const withImage = countPromptTokens([
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          ],
        },
      ]);
      expect(withImage).toBe(
        countPromptTokens([{ role: 'user', content: 'What is this?' }]) + IMAGE_PART_TOKENS,
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

  it('closes', async () => {
    await expect(backend().close()).resolves.toBeUndefined();
  });
});
