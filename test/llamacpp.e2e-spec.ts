import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import Anthropic from '@anthropic-ai/sdk';
import { generateText, stepCountIs, tool } from 'ai';
import OpenAI from 'openai';
import { z } from 'zod';
import { writeTinyLlamaGguf } from './fixtures/gguf/tiny-llama.gguf-writer';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const MODEL = 'tiny-llama';
const EMBEDDING_MODEL = 'tiny-llama-embed';

/** Every string is bounded, so even the random-weight model finishes the JSON well within max_tokens. */
const WEATHER_PARAMETERS = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 12 },
    unit: { type: 'string', enum: ['c', 'f'] },
    days: { type: 'integer' },
  },
  required: ['city', 'unit', 'days'],
  additionalProperties: false,
};

const TOOLS = [
  {
    type: 'function' as const,
    function: { name: 'get_weather', description: 'Weather of a city', parameters: WEATHER_PARAMETERS },
  },
  {
    type: 'function' as const,
    function: {
      name: 'get_time',
      parameters: {
        type: 'object',
        properties: { zone: { type: 'string', maxLength: 8 } },
        required: ['zone'],
        additionalProperties: false,
      },
    },
  },
];

/** Validates an instance of WEATHER_PARAMETERS, field by field (the schema is small and fixed). */
function expectWeatherArguments(json: string): void {
  const value = JSON.parse(json) as Record<string, unknown>;
  expect(Object.keys(value).sort()).toEqual(['city', 'days', 'unit']);
  expect(typeof value.city).toBe('string');
  expect((value.city as string).length).toBeLessThanOrEqual(12);
  expect(['c', 'f']).toContain(value.unit);
  expect(Number.isInteger(value.days)).toBe(true);
}
/** Letters the fixture's tokenizer has no merges for: one token per character. */
const UNMERGED = 'xyzzyqxkv';

function catalogFor(modelPath: string) {
  return {
    models: [
      {
        id: MODEL,
        type: 'chat',
        owned_by: 'e2e',
        // One thread: the CI machine is shared, and llama.cpp's spinning worker threads hurt more than help.
        // 2048 tokens: offered functions are documented in the prompt, and the fixture's byte-level
        // tokenizer spends about a token per character on them.
        backend: { kind: 'llamacpp', modelPath, contextSize: 2048, sequences: 4, threads: 1 },
        // The image-URL test serves its picture from loopback: `any` lets that URL past the gateway's policy
        // so the refusal it pins is the text-only model's own.
        urlInputs: 'any',
      },
      {
        // The same GGUF through node-llama-cpp's embedding context (its vectors have 64 values).
        id: EMBEDDING_MODEL,
        type: 'embedding',
        owned_by: 'e2e',
        dimensions: 32,
        backend: { kind: 'llamacpp', modelPath, contextSize: 512, threads: 1 },
      },
    ],
  };
}

/**
 * Real llama.cpp inference through the real stack: a tiny random-weight llama GGUF is generated for the
 * run, a chat worker loads it with the `llamacpp` backend, and the official client talks to the gateway.
 */
describe('the llamacpp backend', () => {
  let dir: string;
  let stack: Stack;
  let client: OpenAI;
  /** Every /v1/models answer seen while the worker started, with whether it had logged its model loaded. */
  const listings: Array<{ listed: boolean; loadedLogged: boolean }> = [];

  const loadedLine = `model ${MODEL} loaded in`;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mgw-llamacpp-'));
    const modelPath = join(dir, 'tiny-llama.gguf');
    await writeTinyLlamaGguf(modelPath, { seed: 7 });
    stack = await Stack.start({
      catalog: catalogFor(modelPath),
      without: ['chat-worker', 'image-worker'],
      waitForModels: [],
    });
    client = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });

    // The worker starts only now, so every listing from its start until it is served is observed.
    // Debug level: the worker then logs each job's outcome (completed / cancelled).
    const worker = stack.spawnExtra('chat-worker:llama', { WORKER_MODELS: MODEL, LOG_LEVEL: 'debug' });
    await waitFor(
      `${MODEL} to be served`,
      async () => {
        if (worker.exitCode !== null) throw new Error('the worker exited');
        const models = await client.models.list();
        const listed = models.data.some((m) => m.id === MODEL);
        // Read after the answer: a worker that registers only after logging its load has logged it by now.
        const loadedLogged = stack.logs('chat-worker:llama').includes(loadedLine);
        listings.push({ listed, loadedLogged });
        return listed;
      },
      60_000,
      () => `:\n${stack.logs('chat-worker:llama')}`,
    );
  });

  afterAll(async () => {
    await stack?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('registers the worker only after the model is loaded', () => {
    expect(listings.at(-1)).toEqual({ listed: true, loadedLogged: true });
    expect(listings.filter((l) => l.listed && !l.loadedLogged)).toEqual([]);
    const logs = stack.logs('chat-worker:llama');
    expect(logs).toContain('chat wrapper ChatML');
    expect(logs.indexOf(loadedLine)).toBeLessThan(logs.indexOf(`serving ${MODEL}`));
  });

  it('streams several content chunks as they are generated, then ends with length and usage', async () => {
    const stream = await client.chat.completions.create({
      model: MODEL,
      stream: true,
      max_tokens: 24,
      temperature: 0,
      messages: [{ role: 'user', content: 'Tell me a story.' }],
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const content = chunks.filter((c) => (c.choices[0]?.delta.content ?? '') !== '');
    expect(content.length).toBeGreaterThanOrEqual(5);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    const last = chunks.at(-1)!;
    expect(last.choices[0]!.finish_reason).toBe('length');
    expect(last.usage!.completion_tokens).toBe(24);
    expect(last.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(content.length).toBeLessThanOrEqual(24);
  });

  it('stops at max_tokens with finish_reason length and exactly that many completion tokens', async () => {
    const completion = await client.chat.completions.create({
      model: MODEL,
      max_tokens: 7,
      messages: [{ role: 'user', content: 'Count to ten.' }],
    });
    expect(completion.choices).toHaveLength(1);
    expect(completion.choices[0]!.finish_reason).toBe('length');
    expect(completion.choices[0]!.message.content!.length).toBeGreaterThan(0);
    const usage = completion.usage!;
    expect(usage.completion_tokens).toBe(7);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
  });

  it("counts prompt tokens with llama.cpp's tokenizer over the templated prompt", async () => {
    const promptTokens = async (content: string) =>
      (
        await client.chat.completions.create({
          model: MODEL,
          max_tokens: 1,
          messages: [{ role: 'user', content }],
        })
      ).usage!.prompt_tokens;

    // node-llama-cpp's ChatML wrapper (resolved from the GGUF's template) renders BOS <|im_start|> "u" "s"
    // "er" "\n" … <|im_end|> "\n" <|im_start|> "a" "s" "s" "is" "t" "an" "t" "\n": 17 tokens with the
    // fixture's merges, plus one per unmerged letter of the content.
    const CHATML = 17;
    expect(await promptTokens(UNMERGED)).toBe(CHATML + UNMERGED.length);
    expect(await promptTokens(UNMERGED + UNMERGED)).toBe(CHATML + 2 * UNMERGED.length);
    // " the" is one token ("Ġthe") after merges: the model's tokenizer counts, not characters.
    expect(await promptTokens(`${UNMERGED} the`)).toBe(CHATML + UNMERGED.length + 1);
  });

  it("counts a Messages prompt on the worker with llama.cpp's tokenizer, as messages.create bills it", async () => {
    const anthropic = new Anthropic({ apiKey: stack.apiKey, baseURL: stack.baseUrl, maxRetries: 0 });
    const plain = { model: MODEL, messages: [{ role: 'user' as const, content: UNMERGED }] };
    // The same templated prompt as the chat completion above: no o200k estimate.
    expect(await anthropic.messages.countTokens(plain)).toEqual({ input_tokens: 17 + UNMERGED.length });
    const tools: Anthropic.Tool[] = [
      {
        name: 'get_time',
        description: 'The time in a zone',
        input_schema: {
          type: 'object',
          properties: { zone: { type: 'string', maxLength: 8 } },
          required: ['zone'],
        },
      },
    ];
    const asks: Anthropic.MessageCountTokensParams[] = [
      plain,
      { ...plain, system: `${UNMERGED} the` },
      // Offered functions are documented in the prompt (tool_choice auto by default)…
      { ...plain, tools },
      // …and not with tool_choice none.
      { ...plain, tools, tool_choice: { type: 'none' } },
    ];
    const counts: number[] = [];
    for (const ask of asks) {
      const { input_tokens } = await anthropic.messages.countTokens(ask);
      const message = await anthropic.messages.create({ ...ask, max_tokens: 1 });
      expect(input_tokens).toBe(message.usage.input_tokens);
      counts.push(input_tokens);
    }
    expect(counts[1]).toBeGreaterThan(counts[0]!);
    expect(counts[2]).toBeGreaterThan(counts[0]! + 20);
    expect(counts[3]).toBe(counts[0]);
  });

  it('truncates at a stop sequence found in a deterministic answer, with finish_reason stop', async () => {
    const request = {
      model: MODEL,
      max_tokens: 40,
      temperature: 0,
      messages: [{ role: 'user' as const, content: 'Say something long.' }],
    };
    const full = (await client.chat.completions.create(request)).choices[0]!.message.content!;
    const again = (await client.chat.completions.create(request)).choices[0]!.message.content!;
    expect(again).toBe(full);

    // A 3-character piece that first occurs well inside the answer.
    let at = -1;
    for (let k = 4; k + 3 <= full.length - 4; k++) {
      if (full.indexOf(full.slice(k, k + 3)) === k) {
        at = k;
        break;
      }
    }
    expect(at).toBeGreaterThan(0);
    const stop = full.slice(at, at + 3);

    const stopped = await client.chat.completions.create({ ...request, stop: [stop] });
    expect(stopped.choices[0]!.message.content).toBe(full.slice(0, at));
    expect(stopped.choices[0]!.finish_reason).toBe('stop');
    expect(stopped.usage!.completion_tokens).toBeLessThan(40);

    const streamed = await client.chat.completions.create({ ...request, stop: stop, stream: true });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of streamed) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe(full.slice(0, at));
    expect(finish).toBe('stop');
  });

  it('returns n independent choices, and the same text again for the same seed', async () => {
    const request = {
      model: MODEL,
      n: 2,
      max_tokens: 8,
      temperature: 1,
      seed: 1234,
      messages: [{ role: 'user' as const, content: 'Two answers, please.' }],
    };
    const completion = await client.chat.completions.create(request);
    expect(completion.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(completion.choices.every((c) => c.finish_reason === 'length')).toBe(true);
    expect(completion.usage!.completion_tokens).toBe(16);
    const [first, second] = completion.choices.map((c) => c.message.content);
    expect(first).not.toBe(second);

    const single = { ...request, n: 1 };
    const a = (await client.chat.completions.create(single)).choices[0]!.message.content;
    const b = (await client.chat.completions.create(single)).choices[0]!.message.content;
    expect(a).toBe(b);
  });

  it('serves concurrent requests on the shared context', async () => {
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        client.chat.completions.create({
          model: MODEL,
          max_tokens: 5,
          messages: [{ role: 'user', content: `request ${i}` }],
        }),
      ),
    );
    for (const answer of answers) {
      expect(answer.choices[0]!.finish_reason).toBe('length');
      expect(answer.usage!.completion_tokens).toBe(5);
    }
  });

  it('stops generating for a client that goes away, and keeps serving', async () => {
    const controller = new AbortController();
    // No max_tokens: left alone, this would generate until the context is full. The client will not resume
    // (`x-stream-resume: off`), so leaving cancels its job without the resume grace.
    const stream = await client.chat.completions.create(
      { model: MODEL, stream: true, messages: [{ role: 'user', content: 'Never stop talking.' }] },
      { signal: controller.signal, headers: { 'x-stream-resume': 'off' } },
    );
    let id = '';
    let chunks = 0;
    try {
      for await (const chunk of stream) {
        id = chunk.id;
        if (++chunks === 3) controller.abort();
      }
    } catch {
      // The SDK reports the abort it was asked for.
    }
    expect(controller.signal.aborted).toBe(true);
    const cancelled = `request ${id.replace(/^chatcmpl-/, '')} model ${MODEL} cancelled`;
    await waitFor(
      `"${cancelled}" in the worker's log`,
      () => stack.logs('chat-worker:llama').includes(cancelled),
      30_000,
      () => `:\n${stack.logs('chat-worker:llama')}`,
    );

    // Every sequence is usable again: one request takes all four.
    const after = await client.chat.completions.create({
      model: MODEL,
      n: 4,
      max_tokens: 3,
      messages: [{ role: 'user', content: 'Still there?' }],
    });
    expect(after.choices.map((c) => c.finish_reason)).toEqual(['length', 'length', 'length', 'length']);
  });

  it('refuses image input with a 400 naming the field', async () => {
    await expect(
      client.chat.completions.create({
        model: MODEL,
        messages: [
          {
            role: 'user',
            content: [{ type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }],
          },
        ],
      }),
    ).rejects.toMatchObject({ status: 400, param: 'messages[0].content' });
  });

  // Tools, structured outputs and logprobs reach the backend once the HTTP edge accepts those fields.
  describe('tools, structured outputs and logprobs', () => {
    it('returns a forced call of the named function, arguments valid against its schema, without running it', async () => {
      const completion = await client.chat.completions.create({
        model: MODEL,
        max_tokens: 200,
        temperature: 0,
        messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
        tools: TOOLS,
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
      });
      const choice = completion.choices[0]!;
      expect(choice.finish_reason).toBe('tool_calls');
      expect(choice.message.content).toBeNull();
      expect(choice.message.tool_calls).toHaveLength(1);
      const call = choice.message.tool_calls![0]!;
      expect(call.id).toMatch(/^call_/);
      if (call.type !== 'function') throw new Error(`a ${call.type} tool call`);
      expect(call.function.name).toBe('get_weather');
      expectWeatherArguments(call.function.arguments);
      // The offered functions are documented in the prompt, so they count as prompt tokens.
      expect(completion.usage!.prompt_tokens).toBeGreaterThan(300);
    });

    it('streams a call forced by tool_choice required: id and name first, then argument fragments', async () => {
      const stream = await client.chat.completions.create({
        model: MODEL,
        stream: true,
        max_tokens: 200,
        temperature: 0,
        messages: [{ role: 'user', content: 'Weather in Oslo, please.' }],
        tools: [TOOLS[0]!],
        tool_choice: 'required',
        parallel_tool_calls: false,
      });
      const deltas = [];
      let finish: string | null = null;
      for await (const chunk of stream) {
        deltas.push(...(chunk.choices[0]?.delta.tool_calls ?? []));
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      expect(deltas[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather' } });
      expect(deltas[0]!.id).toMatch(/^call_/);
      expect(deltas.slice(1).length).toBeGreaterThan(1);
      expect(deltas.every((d) => d.index === 0)).toBe(true);
      expectWeatherArguments(deltas.map((d) => d.function?.arguments ?? '').join(''));
      expect(finish).toBe('tool_calls');
    });

    it('answers after a tool loop: the assistant call and the tool result are part of the prompt', async () => {
      const messages = [
        { role: 'user' as const, content: 'What is the weather in Paris?' },
        {
          role: 'assistant' as const,
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function' as const,
              function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"c","days":1}' },
            },
          ],
        },
        { role: 'tool' as const, tool_call_id: 'call_1', content: '21 degrees and sunny' },
      ];
      const completion = await client.chat.completions.create({
        model: MODEL,
        max_tokens: 5,
        temperature: 0,
        messages,
        tools: TOOLS,
      });
      expect(completion.choices[0]!.message.content!.length).toBeGreaterThan(0);
      expect(completion.usage!.completion_tokens).toBeGreaterThan(0);
      const withoutResult = await client.chat.completions.create({
        model: MODEL,
        max_tokens: 1,
        messages: messages.slice(0, 1),
        tools: TOOLS,
      });
      expect(completion.usage!.prompt_tokens).toBeGreaterThan(withoutResult.usage!.prompt_tokens + 10);
    });

    it('runs a full tool loop with the Vercel AI SDK: a forced call, the executed result, then an answer', async () => {
      const provider = createOpenAICompatible({
        name: 'model-gateway',
        baseURL: `${stack.baseUrl}/v1`,
        apiKey: stack.apiKey,
        includeUsage: true,
      });
      const executed: string[] = [];
      const result = await generateText({
        model: provider.chatModel(MODEL),
        tools: {
          get_weather: tool({
            description: 'Weather of a city',
            inputSchema: z.object({ city: z.string().max(24) }),
            execute: ({ city }) => {
              executed.push(city);
              return Promise.resolve(`In ${city} it is 21 degrees and sunny`);
            },
          }),
        },
        // Random weights never open a call on their own: the first step forces one and the next forbids
        // any, so the loop is call → tool result → answer whatever the model samples.
        prepareStep: ({ stepNumber }) => ({ toolChoice: stepNumber === 0 ? 'required' : 'none' }),
        stopWhen: stepCountIs(3),
        maxOutputTokens: 120,
        temperature: 0,
        prompt: 'What is the weather in Paris?',
        // The second request's body is read below; the AI SDK keeps a step's request body only when asked.
        include: { requestBody: true },
      });
      expect(result.steps).toHaveLength(2);
      const [call, answer] = result.steps as [(typeof result.steps)[0], (typeof result.steps)[0]];
      expect(call.finishReason).toBe('tool-calls');
      expect(call.toolCalls.map((c) => c.toolName)).toEqual(['get_weather']);
      expect(executed).toHaveLength(1);
      expect(answer.toolCalls).toHaveLength(0);
      expect(['stop', 'length']).toContain(answer.finishReason);
      // The second request sent the call back with the executed tool's result, and the gateway answered it.
      const second = JSON.parse(String(answer.request.body)) as { messages: Array<Record<string, unknown>> };
      expect(second.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
      expect(second.messages[2]).toMatchObject({ tool_call_id: call.toolCalls[0]!.toolCallId });
      expect(JSON.stringify(second.messages[2])).toContain('21 degrees and sunny');
      expect(answer.usage.outputTokens!).toBeGreaterThan(0);
    });

    it('answers json_schema with JSON valid against the schema, which the SDK parses', async () => {
      const completion = await client.chat.completions.parse({
        model: MODEL,
        max_tokens: 300,
        temperature: 0,
        messages: [{ role: 'user', content: 'The weather, as JSON.' }],
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'weather', strict: true, schema: WEATHER_PARAMETERS },
        },
      });
      const message = completion.choices[0]!.message;
      expect(completion.choices[0]!.finish_reason).toBe('stop');
      expectWeatherArguments(message.content!);
      expect(message.parsed).toEqual(JSON.parse(message.content!));
      // The schema is stated in the prompt, so it counts as prompt tokens.
      const plain = await client.chat.completions.create({
        model: MODEL,
        max_tokens: 1,
        messages: [{ role: 'user', content: 'The weather, as JSON.' }],
      });
      expect(completion.usage!.prompt_tokens).toBeGreaterThan(
        plain.usage!.prompt_tokens + JSON.stringify(WEATHER_PARAMETERS).length / 2,
      );
    });

    it('answers json_object with a JSON object', async () => {
      // Sampled (seeded): greedy decoding keeps this random-weight model inside its first string.
      const completion = await client.chat.completions.create({
        model: MODEL,
        max_tokens: 600,
        temperature: 1,
        seed: 12,
        messages: [{ role: 'user', content: 'Reply in JSON.' }],
        response_format: { type: 'json_object' },
      });
      expect(completion.choices[0]!.finish_reason).toBe('stop');
      const value: unknown = JSON.parse(completion.choices[0]!.message.content!);
      expect(typeof value === 'object' && value !== null && !Array.isArray(value)).toBe(true);
    });

    it('refuses a schema outside the subset the grammar enforces, naming the field', async () => {
      await expect(
        client.chat.completions.create({
          model: MODEL,
          messages: [{ role: 'user', content: 'hi' }],
          response_format: {
            type: 'json_schema',
            json_schema: {
              name: 'n',
              schema: { type: 'object', properties: { n: { type: 'number', minimum: 1 } } },
            },
          },
        }),
      ).rejects.toMatchObject({ status: 400, param: 'response_format.json_schema.schema' });
    });

    it("reports each token's logprob and its top alternatives, from the model's probabilities", async () => {
      const completion = await client.chat.completions.create({
        model: MODEL,
        max_tokens: 4,
        temperature: 0,
        messages: [{ role: 'user', content: 'Tell me a story.' }],
        logprobs: true,
        top_logprobs: 2,
      });
      const choice = completion.choices[0]!;
      const content = choice.logprobs!.content!;
      expect(content).toHaveLength(4);
      expect(content.map((t) => t.token).join('')).toBe(choice.message.content);
      for (const token of content) {
        expect(token.logprob).toBeLessThanOrEqual(0);
        expect(token.bytes).toEqual([...Buffer.from(token.token, 'utf8')]);
        expect(token.top_logprobs).toHaveLength(2);
        expect(token.top_logprobs[0]!.logprob).toBeGreaterThanOrEqual(token.top_logprobs[1]!.logprob);
        // Greedy decoding picks the most likely token.
        expect(token.top_logprobs[0]!.token).toBe(token.token);
        expect(token.top_logprobs[0]!.logprob).toBeCloseTo(token.logprob, 6);
      }
    });
  });

  /**
   * The Responses and Messages APIs on the same model, through the same translation to the chat job: the
   * text is gibberish, so these check the protocols' shapes, orders and counts, and the grammar-forced calls.
   */
  describe('the Responses and Messages APIs', () => {
    let anthropic: Anthropic;
    /** Counts the requests an image URL draws: neither the gateway nor the worker may ever fetch one. */
    let imageHost: Server;
    let imageFetches = 0;
    let imageUrl = '';

    beforeAll(async () => {
      anthropic = new Anthropic({ apiKey: stack.apiKey, baseURL: stack.baseUrl, maxRetries: 0 });
      imageHost = createServer((_req, res) => {
        imageFetches++;
        res.writeHead(404).end();
      });
      await new Promise<void>((resolve) => imageHost.listen(0, '127.0.0.1', resolve));
      imageUrl = `http://127.0.0.1:${(imageHost.address() as AddressInfo).port}/cat.png`;
    });

    afterAll(async () => {
      await new Promise<void>((resolve) => imageHost?.close(() => resolve()));
    });

    const RESPONSES_TOOL = {
      type: 'function' as const,
      name: 'get_weather',
      description: 'Weather of a city',
      parameters: WEATHER_PARAMETERS,
      strict: true,
    };
    const MESSAGES_TOOL = {
      name: 'get_weather',
      description: 'Weather of a city',
      input_schema: { ...WEATHER_PARAMETERS, type: 'object' as const },
    };

    it('answers responses.create up to max_output_tokens, incomplete, with its usage', async () => {
      const response = await client.responses.create({
        model: MODEL,
        input: 'Tell me a story.',
        max_output_tokens: 16,
        temperature: 0,
      });
      expect(response).toMatchObject({
        object: 'response',
        status: 'incomplete',
        model: MODEL,
        incomplete_details: { reason: 'max_output_tokens' },
      });
      expect(response.output).toHaveLength(1);
      expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'incomplete' });
      expect(response.output_text.length).toBeGreaterThan(0);
      expect(response.usage).toMatchObject({ output_tokens: 16 });
      expect(response.usage!.input_tokens).toBeGreaterThan(0);
      expect(response.usage!.total_tokens).toBe(response.usage!.input_tokens + 16);
    });

    it('streams a response in event order with contiguous sequence numbers, completed with usage', async () => {
      // A json_schema format ends the answer by grammar, so even random weights complete it.
      const stream = client.responses.stream({
        model: MODEL,
        input: 'The weather, as JSON.',
        max_output_tokens: 300,
        temperature: 0,
        text: { format: { type: 'json_schema', name: 'weather', schema: WEATHER_PARAMETERS, strict: true } },
      });
      const events: Array<{ type: string; sequence_number: number }> = [];
      let text = '';
      for await (const event of stream) {
        events.push(event);
        if (event.type === 'response.output_text.delta') text += event.delta;
      }
      const final = await stream.finalResponse();
      expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
      const types = events.map((e) => e.type);
      expect(types.slice(0, 4)).toEqual([
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
      ]);
      const deltas = types.filter((type) => type === 'response.output_text.delta');
      expect(deltas.length).toBeGreaterThan(1);
      expect(types.slice(4, 4 + deltas.length)).toEqual(deltas);
      expect(types.slice(4 + deltas.length)).toEqual([
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ]);
      expect(final.status).toBe('completed');
      expect(final.output_text).toBe(text);
      expectWeatherArguments(text);
      expect(final.usage!.output_tokens).toBeGreaterThan(0);
      expect(final.usage!.input_tokens).toBeGreaterThan(0);
    });

    it('returns a function call forced by tool_choice, its arguments valid, created and streamed', async () => {
      const request = {
        model: MODEL,
        input: 'What is the weather in Paris?',
        max_output_tokens: 200,
        temperature: 0,
        tools: [RESPONSES_TOOL],
        tool_choice: { type: 'function' as const, name: 'get_weather' },
      };
      const response = await client.responses.create(request);
      expect(response.status).toBe('completed');
      const calls = response.output.filter((item) => item.type === 'function_call');
      expect(calls).toHaveLength(1);
      const call = calls[0]!;
      if (call.type !== 'function_call') throw new Error('not a function call');
      expect(call).toMatchObject({
        name: 'get_weather',
        status: 'completed',
        call_id: expect.stringMatching(/^call_/),
      });
      expectWeatherArguments(call.arguments);

      const stream = client.responses.stream(request);
      const fragments: string[] = [];
      let done = '';
      for await (const event of stream) {
        if (event.type === 'response.function_call_arguments.delta') fragments.push(event.delta);
        if (event.type === 'response.function_call_arguments.done') done = event.arguments;
      }
      const final = await stream.finalResponse();
      expect(fragments.length).toBeGreaterThan(1);
      expect(fragments.join('')).toBe(done);
      expectWeatherArguments(done);
      expect(final.status).toBe('completed');
      expect(final.output.find((item) => item.type === 'function_call')).toMatchObject({ arguments: done });

      // The call's output continues the stored conversation; the model reads call and output in its prompt.
      const answer = await client.responses.create({
        model: MODEL,
        previous_response_id: response.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: '21 degrees and sunny' }],
        tools: [RESPONSES_TOOL],
        tool_choice: 'none',
        max_output_tokens: 16,
        temperature: 0,
      });
      expect(answer.output.map((item) => item.type)).toEqual(['message']);
      expect(answer.output_text.length).toBeGreaterThan(0);
      const unanswered = await client.responses.create({
        ...request,
        tool_choice: 'none',
        max_output_tokens: 16,
      });
      expect(answer.usage!.input_tokens).toBeGreaterThan(unanswered.usage!.input_tokens + 10);
    });

    it('answers messages.create and messages.stream with max_tokens as the stop reason and usage', async () => {
      const request = {
        model: MODEL,
        max_tokens: 8,
        // Greedy: a sampled end-of-turn token could end the random-weight answer before max_tokens.
        temperature: 0,
        messages: [{ role: 'user' as const, content: 'Tell me a story.' }],
      };
      const message = await anthropic.messages.create(request);
      expect(message).toMatchObject({
        type: 'message',
        role: 'assistant',
        model: MODEL,
        stop_reason: 'max_tokens',
      });
      expect(message.id).toMatch(/^msg_/);
      expect(message.content).toEqual([{ type: 'text', text: expect.any(String) }]);
      expect(message.usage.output_tokens).toBe(8);
      expect(message.usage.input_tokens).toBeGreaterThan(0);

      const stream = anthropic.messages.stream(request);
      const deltas: string[] = [];
      stream.on('text', (text) => deltas.push(text));
      const streamed = await stream.finalMessage();
      expect(deltas.length).toBeGreaterThan(1);
      expect(streamed.content).toEqual([{ type: 'text', text: deltas.join('') }]);
      // Greedy decoding: the stream says what the answer said.
      expect(streamed.content).toEqual(message.content);
      expect(streamed.stop_reason).toBe('max_tokens');
      expect(streamed.usage).toMatchObject({ input_tokens: message.usage.input_tokens, output_tokens: 8 });
    });

    it('returns a tool_use forced by tool_choice, its input valid, created and streamed', async () => {
      const request = {
        model: MODEL,
        max_tokens: 200,
        // Greedy, as the chat tests: sampled digits could run on past what a JSON number holds.
        temperature: 0,
        tools: [MESSAGES_TOOL],
        tool_choice: { type: 'tool' as const, name: 'get_weather' },
        messages: [{ role: 'user' as const, content: 'What is the weather in Paris?' }],
      };
      const message = await anthropic.messages.create(request);
      expect(message.stop_reason).toBe('tool_use');
      const uses = message.content.filter((block) => block.type === 'tool_use');
      expect(uses).toHaveLength(1);
      expect(uses[0]).toMatchObject({ id: expect.stringMatching(/^toolu_/), name: 'get_weather' });
      expectWeatherArguments(JSON.stringify(uses[0]!.input));

      const stream = anthropic.messages.stream(request);
      const partials: string[] = [];
      stream.on('inputJson', (partial) => partials.push(partial));
      const streamed = await stream.finalMessage();
      expect(partials.length).toBeGreaterThan(1);
      expectWeatherArguments(partials.join(''));
      expect(streamed.stop_reason).toBe('tool_use');
      expect(streamed.content.find((block) => block.type === 'tool_use')).toMatchObject({
        name: 'get_weather',
        input: JSON.parse(partials.join('')) as unknown,
      });
      expect(streamed.usage.output_tokens).toBeGreaterThan(0);

      // The tool's result goes back as a tool_result block; the model reads call and result in its prompt.
      const answer = await anthropic.messages.create({
        ...request,
        max_tokens: 8,
        tool_choice: { type: 'none' },
        messages: [
          ...request.messages,
          { role: 'assistant', content: message.content },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: uses[0]!.id, content: '21 degrees and sunny' }],
          },
        ],
      });
      expect(answer.content).toEqual([{ type: 'text', text: expect.any(String) }]);
      expect(answer.stop_reason).toBe('max_tokens');
      const unanswered = await anthropic.messages.create({
        ...request,
        max_tokens: 1,
        tool_choice: { type: 'none' },
      });
      expect(answer.usage.input_tokens).toBeGreaterThan(unanswered.usage.input_tokens + 10);
    });

    it('refuses an image URL on this text-only model with a 400 in each protocol, never fetching it', async () => {
      const responses = await client.responses
        .create({
          model: MODEL,
          input: [
            {
              role: 'user',
              content: [
                { type: 'input_text', text: 'What is this?' },
                { type: 'input_image', image_url: imageUrl, detail: 'auto' },
              ],
            },
          ],
        })
        .catch((e: unknown) => e);
      expect(responses).toBeInstanceOf(OpenAI.BadRequestError);
      expect(responses).toMatchObject({ status: 400, type: 'invalid_request_error', param: 'input' });
      expect((responses as Error).message).toContain('accepts text only');

      const messages = await anthropic.messages
        .create({
          model: MODEL,
          max_tokens: 8,
          messages: [
            {
              role: 'user',
              content: [
                { type: 'image', source: { type: 'url', url: imageUrl } },
                { type: 'text', text: 'What is this?' },
              ],
            },
          ],
        })
        .catch((e: unknown) => e);
      expect(messages).toBeInstanceOf(Anthropic.BadRequestError);
      expect(messages).toMatchObject({
        status: 400,
        error: {
          type: 'error',
          error: {
            type: 'invalid_request_error',
            message: expect.stringContaining('accepts text only; messages.0.content has'),
          },
        },
      });

      // Streamed, the refusal comes inside the 200 (a stream opens before its job runs): each protocol's
      // error event.
      const responsesStream = await stack.post('/v1/responses', {
        model: MODEL,
        stream: true,
        input: [{ role: 'user', content: [{ type: 'input_image', image_url: imageUrl }] }],
      });
      const responsesEvents = (await responsesStream.text())
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice('data: '.length)) as { type: string });
      expect(responsesEvents.map((event) => event.type)).toEqual([
        'response.created',
        'response.in_progress',
        'error',
        'response.failed',
      ]);
      expect(responsesEvents[2]).toMatchObject({
        code: 'unsupported_content',
        param: 'input',
        message: expect.stringContaining('accepts text only; input has') as unknown,
      });
      const messagesStream = await stack.post('/v1/messages', {
        model: MODEL,
        max_tokens: 8,
        stream: true,
        system: 'Describe images.',
        messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: imageUrl } }] }],
      });
      expect(messagesStream.status).toBe(200);
      const messagesEvents = (await messagesStream.text()).split('\n').filter((line) => line !== '');
      expect(messagesEvents.slice(-2)).toEqual(['event: error', expect.stringMatching(/^data: /)]);
      expect(JSON.parse(messagesEvents.at(-1)!.slice('data: '.length))).toEqual({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: expect.stringContaining('accepts text only; messages.0.content has'),
        },
      });
      expect(imageFetches).toBe(0);
    });
  });

  it('embeds through the embedding context of the GGUF: unit vectors of the catalog length, the same text alike', async () => {
    const worker = stack.spawnExtra('embedding-worker:llama', { WORKER_MODELS: EMBEDDING_MODEL });
    await waitFor(
      `${EMBEDDING_MODEL} to be served`,
      async () => {
        if (worker.exitCode !== null) throw new Error('the worker exited');
        return (await client.models.list()).data.some((m) => m.id === EMBEDDING_MODEL);
      },
      60_000,
      () => `:\n${stack.logs('embedding-worker:llama')}`,
    );
    const answer = await client.embeddings.create({
      model: EMBEDDING_MODEL,
      input: ['hello world', 'xyzzy', 'hello world'],
      encoding_format: 'float',
    });
    const vectors = answer.data.map((d) => d.embedding);
    for (const vector of vectors) {
      expect(vector).toHaveLength(32);
      expect(Math.hypot(...vector)).toBeCloseTo(1, 4);
    }
    expect(vectors[2]).toEqual(vectors[0]);
    expect(vectors[1]).not.toEqual(vectors[0]);
    expect(answer.usage.prompt_tokens).toBeGreaterThan(0);
  });

  it('stops the worker at start when the GGUF file is missing, naming the model and the field', async () => {
    const catalogPath = join(dir, 'broken-catalog.json');
    const broken = catalogFor('models/missing.gguf');
    broken.models[0]!.id = 'broken-llama';
    await writeFile(catalogPath, JSON.stringify(broken));
    const worker = stack.spawnExtra('chat-worker:broken', {
      CATALOG_PATH: catalogPath,
      WORKER_MODELS: 'broken-llama',
    });
    const [code] = (await once(worker, 'exit')) as [number | null];
    expect(code).toBe(78);
    const logs = stack.logs('chat-worker:broken');
    // A relative modelPath is resolved against the catalog's directory.
    expect(logs).toContain(
      `catalog model "broken-llama": backend.modelPath: no GGUF file at ${join(dir, 'models', 'missing.gguf')}`,
    );
  });
});
