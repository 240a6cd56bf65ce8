import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { chunk, FakeOpenAIUpstream, sendEvent, startStream } from './support/fake-openai-upstream';
import { Stack } from './support/stack';

/**
 * Tools, structured outputs and logprobs end to end, with the clients people use: the official `openai` SDK
 * (create, its stream helper and tool-call events, parse with zod, runTools) and the Vercel AI SDK's
 * OpenAI-compatible provider running a whole agent loop — against the simulator's documented contract and
 * through an `openai` upstream relay that must pass the upstream's tool calls, logprobs and finish reasons
 * on unchanged.
 */

/** Starting a whole stack on a contended machine can take longer than jest's default hook timeout. */
const STACK_START_MS = 120_000;

const weatherParameters = {
  type: 'object',
  properties: {
    city: { type: 'string', minLength: 1, maxLength: 40 },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer', minimum: 1, maximum: 7 },
  },
  required: ['city', 'unit'],
  additionalProperties: false,
};
const timeParameters = {
  type: 'object',
  properties: { zone: { type: 'string', minLength: 3 } },
  required: ['zone'],
  additionalProperties: false,
};
const flightParameters = {
  type: 'object',
  properties: {
    route: {
      type: 'object',
      properties: {
        from: { type: 'string', minLength: 3, maxLength: 3 },
        to: { type: 'string', minLength: 3, maxLength: 3 },
      },
      required: ['from', 'to'],
      additionalProperties: false,
    },
    passengers: {
      type: 'array',
      minItems: 1,
      maxItems: 3,
      items: {
        type: 'object',
        properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0, maximum: 120 } },
        required: ['name', 'age'],
        additionalProperties: false,
      },
    },
    cabin: { type: 'string', enum: ['economy', 'business'] },
  },
  required: ['route', 'passengers', 'cabin'],
  additionalProperties: false,
};

const tools: OpenAI.ChatCompletionFunctionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather in a city',
      parameters: weatherParameters,
    },
  },
  {
    type: 'function',
    function: { name: 'get_time', description: 'Local time in a time zone', parameters: timeParameters },
  },
  {
    type: 'function',
    function: { name: 'search_flights', description: 'Find flights', parameters: flightParameters },
  },
];

const ajv = new Ajv({ strict: false });
const validators = new Map(tools.map((t) => [t.function.name, ajv.compile(t.function.parameters!)]));

/** Whether `args` is a JSON text whose value validates against the named tool's `parameters`. */
function expectValidArguments(name: string, args: string): void {
  const validate = validators.get(name);
  expect(validate).toBeDefined();
  const value: unknown = JSON.parse(args);
  if (!validate!(value))
    throw new Error(`arguments of ${name} invalid: ${args} ${ajv.errorsText(validate!.errors)}`);
}

function onlyToolCall(message: OpenAI.ChatCompletionMessage): OpenAI.ChatCompletionMessageFunctionToolCall {
  expect(message.tool_calls).toHaveLength(1);
  const call = message.tool_calls![0]!;
  expect(call.type).toBe('function');
  return call as OpenAI.ChatCompletionMessageFunctionToolCall;
}

describe('tools, structured outputs and logprobs against the simulator', () => {
  let stack: Stack;
  let client: OpenAI;

  beforeAll(async () => {
    stack = await Stack.start();
    client = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
  }, STACK_START_MS);

  afterAll(async () => {
    await stack?.stop();
  });

  it('calls the tool the last user message names, with valid arguments, content null and finish_reason tool_calls', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Plan a trip for me.' },
      { role: 'assistant', content: 'Sure, where to?' },
      { role: 'user', content: 'What time is it in Tokyo? Use get_time please.' },
    ];
    const completion = await client.chat.completions.create({ model: 'sim-chat', messages, tools });
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    const call = onlyToolCall(choice.message);
    expect(call.id).toMatch(/^call_/);
    expect(call.function.name).toBe('get_time');
    expectValidArguments('get_time', call.function.arguments);
    expect(choice.logprobs).toBeNull();

    // Tools count as prompt tokens.
    const plain = await client.chat.completions.create({ model: 'sim-chat', messages, max_tokens: 1 });
    expect(completion.usage!.prompt_tokens).toBeGreaterThan(plain.usage!.prompt_tokens);
  });

  it('calls the tool tool_choice names, else the first tool; required calls one; none answers in text', async () => {
    const ask = (content: string, tool_choice?: OpenAI.ChatCompletionToolChoiceOption) =>
      client.chat.completions.create({
        model: 'sim-chat',
        messages: [{ role: 'user', content }],
        tools,
        ...(tool_choice !== undefined && { tool_choice }),
      });

    const named = await ask('Use get_time for Paris.', {
      type: 'function',
      function: { name: 'search_flights' },
    });
    const flight = onlyToolCall(named.choices[0]!.message);
    expect(flight.function.name).toBe('search_flights');
    expectValidArguments('search_flights', flight.function.arguments);

    const first = onlyToolCall((await ask('Help me out with something.')).choices[0]!.message);
    expect(first.function.name).toBe('get_weather');
    expectValidArguments('get_weather', first.function.arguments);

    const required = (await ask('Anything at all.', 'required')).choices[0]!;
    expect(required.finish_reason).toBe('tool_calls');
    expect(required.message.tool_calls!.length).toBeGreaterThan(0);

    const none = (await ask('Use get_time for Paris.', 'none')).choices[0]!;
    expect(none.finish_reason).toBe('stop');
    expect(none.message.tool_calls ?? []).toEqual([]);
    expect(typeof none.message.content).toBe('string');
  });

  it('answers a tool result in text that contains it, closing the loop', async () => {
    const first = await client.chat.completions.create({
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'Weather in Lyon? Use get_weather.' }],
      tools,
    });
    const call = onlyToolCall(first.choices[0]!.message);
    const answer = await client.chat.completions.create({
      model: 'sim-chat',
      tools,
      messages: [
        { role: 'user', content: 'Weather in Lyon? Use get_weather.' },
        first.choices[0]!.message,
        { role: 'tool', tool_call_id: call.id, content: 'Lyon: 23 degrees, light rain' },
      ],
    });
    expect(answer.choices[0]!.finish_reason).toBe('stop');
    expect(answer.choices[0]!.message.tool_calls ?? []).toEqual([]);
    expect(answer.choices[0]!.message.content).toContain('Lyon: 23 degrees, light rain');
  });

  it("streams a tool call in OpenAI's shape: id, type and name first, then argument fragments, then tool_calls", async () => {
    const stream = await client.chat.completions.create({
      model: 'sim-chat',
      stream: true,
      messages: [{ role: 'user', content: 'Find flights with search_flights.' }],
      tools,
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const received of stream) chunks.push(received);

    const pieces = chunks.flatMap((c) => c.choices.flatMap((choice) => choice.delta.tool_calls ?? []));
    expect(pieces.length).toBeGreaterThan(0);
    const [head, ...rest] = pieces;
    expect(head).toMatchObject({ index: 0, id: expect.stringMatching(/^call_/), type: 'function' });
    expect(head!.function!.name).toBe('search_flights');
    for (const piece of rest) {
      expect(piece.index).toBe(0);
      expect(piece).not.toHaveProperty('id');
      expect(piece.function).not.toHaveProperty('name');
    }
    const args = pieces.map((p) => p.function?.arguments ?? '').join('');
    expectValidArguments('search_flights', args);

    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    const final = chunks.at(-1)!;
    expect(final.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' }]);
    expect(final.usage!.prompt_tokens).toBeGreaterThan(0);
  });

  it('chat.completions.stream fires the tool-call events and its finalChatCompletion holds the parsed call', async () => {
    const strictTools = tools.map((t) => ({ ...t, function: { ...t.function, strict: true } }));
    const stream = client.chat.completions.stream({
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'Is it cold? Ask get_weather.' }],
      tools: strictTools,
    });
    const deltas: string[] = [];
    const done: Array<{ name: string; arguments: string; parsed_arguments: unknown }> = [];
    stream.on('tool_calls.function.arguments.delta', (event) => deltas.push(event.arguments_delta));
    stream.on('tool_calls.function.arguments.done', ({ name, arguments: args, parsed_arguments }) =>
      done.push({ name, arguments: args, parsed_arguments }),
    );
    const completion = await stream.finalChatCompletion();

    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    const call = onlyToolCall(choice.message);
    expect(call.function.name).toBe('get_weather');
    expectValidArguments('get_weather', call.function.arguments);
    expect(deltas.join('')).toBe(call.function.arguments);
    expect(done).toEqual([
      {
        name: 'get_weather',
        arguments: call.function.arguments,
        parsed_arguments: JSON.parse(call.function.arguments),
      },
    ]);
  });

  it("runTools runs the SDK's own loop: the tool's result comes back in the final answer", async () => {
    const seen: unknown[] = [];
    const runner = client.chat.completions.runTools({
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'What is the weather in Oslo? Use get_weather.' }],
      tools: [
        zodFunction({
          name: 'get_weather',
          parameters: z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']) }),
          function: (args) => {
            seen.push(args);
            return `Forecast: 4 degrees ${args.unit}, snow`;
          },
        }),
      ],
    });
    const content = await runner.finalContent();
    expect(seen).toHaveLength(1);
    expect(content).toContain('Forecast: 4 degrees');
    expect(runner.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
  });

  const Meeting = z.object({
    title: z.string(),
    day: z.enum(['monday', 'tuesday', 'wednesday']),
    attendees: z.array(z.object({ name: z.string(), optional: z.boolean() })).max(4),
    room: z.object({ building: z.string(), floor: z.number().int().min(0).max(12) }),
  });

  it('parse with a zod schema (json_schema) returns a parsed object valid against it, streamed or not', async () => {
    const request = {
      model: 'sim-chat',
      messages: [{ role: 'user' as const, content: 'Book the weekly planning meeting.' }],
      response_format: zodResponseFormat(Meeting, 'meeting'),
    };
    const completion = await client.chat.completions.parse(request);
    const message = completion.choices[0]!.message;
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(Meeting.safeParse(message.parsed).success).toBe(true);
    expect(message.parsed).toEqual(JSON.parse(message.content!));

    const streamed = await client.chat.completions.stream(request).finalChatCompletion();
    expect(Meeting.safeParse(streamed.choices[0]!.message.parsed).success).toBe(true);
  });

  it('parse with zodFunction tools gives the parsed arguments of the call', async () => {
    const Time = z.object({ zone: z.string().min(3) });
    const completion = await client.chat.completions.parse({
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'What time is it? get_time' }],
      tools: [zodFunction({ name: 'get_time', parameters: Time })],
    });
    const calls = completion.choices[0]!.message.tool_calls ?? [];
    expect(calls).toHaveLength(1);
    const call = calls[0]!;
    expect(call.type).toBe('function');
    if (call.type !== 'function') return;
    expect(call.function.name).toBe('get_time');
    expect(Time.safeParse(call.function.parsed_arguments).success).toBe(true);
  });

  it('json_object answers with a JSON object', async () => {
    const completion = await client.chat.completions.create({
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'Describe a cat as JSON.' }],
      response_format: { type: 'json_object' },
    });
    const value: unknown = JSON.parse(completion.choices[0]!.message.content!);
    expect(typeof value).toBe('object');
    expect(value).not.toBeNull();
    expect(Array.isArray(value)).toBe(false);
  });

  it('reports deterministic logprobs per token with top alternatives, which spell out the content', async () => {
    const request = {
      model: 'sim-chat',
      messages: [{ role: 'user' as const, content: 'Count to five.' }],
      logprobs: true,
      top_logprobs: 3,
      max_tokens: 12,
      seed: 11,
    };
    const first = await client.chat.completions.create(request);
    const again = await client.chat.completions.create(request);
    const choice = first.choices[0]!;
    const tokens = choice.logprobs!.content!;
    expect(choice.logprobs!.refusal).toBeNull();
    expect(tokens.length).toBeGreaterThan(0);
    expect(tokens.map((t) => t.token).join('')).toBe(choice.message.content);
    for (const token of tokens) {
      expect(Number.isFinite(token.logprob)).toBe(true);
      expect(token.logprob).toBeLessThanOrEqual(0);
      expect(token.bytes).toEqual([...Buffer.from(token.token)]);
      expect(token.top_logprobs).toHaveLength(3);
    }
    expect(again.choices[0]!.logprobs).toEqual(choice.logprobs);

    const streamed = await client.chat.completions.stream(request).finalChatCompletion();
    const streamedTokens = streamed.choices[0]!.logprobs!.content!;
    expect(streamedTokens.map((t) => t.token).join('')).toBe(streamed.choices[0]!.message.content);
    expect(streamedTokens).toEqual(tokens);
  });

  it('n=2 streams a tool call per choice, and logprobs per choice', async () => {
    const calls = await client.chat.completions
      .stream({ model: 'sim-chat', n: 2, messages: [{ role: 'user', content: 'Use get_time.' }], tools })
      .finalChatCompletion();
    expect(calls.choices.map((c) => c.index)).toEqual([0, 1]);
    for (const choice of calls.choices) {
      expect(choice.finish_reason).toBe('tool_calls');
      const call = onlyToolCall(choice.message);
      expect(call.function.name).toBe('get_time');
      expectValidArguments('get_time', call.function.arguments);
    }

    const texts = await client.chat.completions
      .stream({
        model: 'sim-chat',
        n: 2,
        messages: [{ role: 'user', content: 'Say something.' }],
        logprobs: true,
        max_tokens: 8,
      })
      .finalChatCompletion();
    for (const choice of texts.choices) {
      expect(choice.logprobs!.content!.map((t) => t.token).join('')).toBe(choice.message.content);
    }
  });

  it('the Vercel AI SDK runs a full tool loop (call, tool result, answer), in generateText and streamText', async () => {
    const provider = createOpenAICompatible({
      name: 'model-gateway',
      baseURL: `${stack.baseUrl}/v1`,
      apiKey: stack.apiKey,
      includeUsage: true,
    });
    const executed: unknown[] = [];
    const agentTools = {
      get_weather: tool({
        description: 'Current weather in a city',
        inputSchema: z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']) }),
        execute: ({ city, unit }) => {
          executed.push(city);
          return Promise.resolve(`In ${city} it is 18 degrees ${unit} and windy`);
        },
      }),
    };
    const prompt = 'Should I take a jacket today? Check get_weather.';

    const generated = await generateText({
      model: provider.chatModel('sim-chat'),
      tools: agentTools,
      stopWhen: stepCountIs(4),
      prompt,
    });
    expect(generated.steps.map((s) => s.finishReason)).toEqual(['tool-calls', 'stop']);
    expect(generated.steps[0]!.toolCalls.map((c) => c.toolName)).toEqual(['get_weather']);
    expect(generated.text).toContain('degrees');
    expect(generated.text).toContain('and windy');
    expect(executed).toHaveLength(1);

    const streamed = streamText({
      model: provider.chatModel('sim-chat'),
      tools: agentTools,
      stopWhen: stepCountIs(4),
      prompt,
    });
    expect(await streamed.text).toContain('and windy');
    expect((await streamed.steps).map((s) => s.finishReason)).toEqual(['tool-calls', 'stop']);
    expect(executed).toHaveLength(2);
  });
});

describe('tools and logprobs through an openai upstream relay', () => {
  const CHAT = '/v1/chat/completions';
  let fake: FakeOpenAIUpstream;
  let stack: Stack;
  let client: OpenAI;

  beforeAll(async () => {
    fake = await FakeOpenAIUpstream.start();
    stack = await Stack.start({
      catalog: {
        models: [
          {
            id: 'up-tools',
            type: 'chat',
            owned_by: 'upstream',
            backend: { kind: 'openai', baseUrl: fake.baseUrl, upstreamModel: 'upstream-llama' },
          },
        ],
      },
      env: { DEFAULT_CHAT_MODEL: 'up-tools' },
      appEnv: { 'chat-worker': { WORKER_MODELS: 'up-tools' } },
      without: ['image-worker'],
      waitForModels: ['up-tools'],
    });
    client = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
  }, STACK_START_MS);

  afterAll(async () => {
    await stack?.stop();
    await fake?.stop();
  });

  /** Two parallel calls, streamed the way OpenAI streams them. */
  function streamTwoCalls(): void {
    fake.handle(CHAT, async (_request, res) => {
      startStream(res);
      await sendEvent(
        res,
        chunk([
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                index: 0,
                id: 'call_up1',
                type: 'function',
                function: { name: 'get_weather', arguments: '' },
              },
            ],
          },
        ]),
      );
      await sendEvent(res, chunk([{ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }]));
      await sendEvent(
        res,
        chunk([{ tool_calls: [{ index: 0, function: { arguments: '"Paris","unit":"celsius"}' } }] }]),
      );
      await sendEvent(
        res,
        chunk([
          {
            tool_calls: [
              { index: 1, id: 'call_up2', type: 'function', function: { name: 'get_time', arguments: '' } },
            ],
          },
        ]),
      );
      await sendEvent(
        res,
        chunk([{ tool_calls: [{ index: 1, function: { arguments: '{"zone":"Europe/Paris"}' } }] }]),
      );
      await sendEvent(res, chunk([{ finish_reason: 'tool_calls' }]));
      await sendEvent(res, chunk([], { prompt_tokens: 64, completion_tokens: 21 }));
      await sendEvent(res, '[DONE]');
      res.end();
    });
  }

  const expectedCalls = [
    {
      id: 'call_up1',
      type: 'function',
      function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"celsius"}' },
    },
    {
      id: 'call_up2',
      type: 'function',
      function: { name: 'get_time', arguments: '{"zone":"Europe/Paris"}' },
    },
  ];

  it("passes tools through and relays the upstream's streamed parallel tool calls unchanged", async () => {
    streamTwoCalls();
    const stream = client.chat.completions.stream({
      model: 'up-tools',
      messages: [{ role: 'user', content: 'Weather and time in Paris?' }],
      tools,
      tool_choice: 'auto',
      parallel_tool_calls: true,
    });
    const done: string[] = [];
    stream.on('tool_calls.function.arguments.done', ({ name }) => done.push(name));
    const completion = await stream.finalChatCompletion();

    const upstream = fake.last.body;
    expect(upstream.tools).toEqual(tools);
    expect(upstream.tool_choice).toBe('auto');
    expect(upstream.parallel_tool_calls).toBe(true);

    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toEqual(expectedCalls);
    expect(done).toEqual(['get_weather', 'get_time']);
    expect(completion.usage).toMatchObject({ prompt_tokens: 64, completion_tokens: 21 });
  });

  it('assembles the same calls for a non-streaming client', async () => {
    streamTwoCalls();
    const completion = await client.chat.completions.create({
      model: 'up-tools',
      messages: [{ role: 'user', content: 'Weather and time in Paris?' }],
      tools,
    });
    expect(completion.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: { role: 'assistant', content: null, tool_calls: expectedCalls },
      logprobs: null,
    });
  });

  it('relays a call sent whole with its finish reason in one chunk, as vLLM does', async () => {
    fake.handle(CHAT, async (_request, res) => {
      startStream(res);
      await sendEvent(res, chunk([{ role: 'assistant', content: '' }]));
      await sendEvent(
        res,
        chunk([
          {
            tool_calls: [
              {
                index: 0,
                id: 'chatcmpl-tool-9f8e7d',
                type: 'function',
                function: { name: 'get_time', arguments: '{"zone": "Asia/Tokyo"}' },
              },
            ],
            finish_reason: 'tool_calls',
          },
        ]),
      );
      await sendEvent(res, chunk([], { prompt_tokens: 30, completion_tokens: 9 }));
      await sendEvent(res, '[DONE]');
      res.end();
    });
    const completion = await client.chat.completions
      .stream({ model: 'up-tools', messages: [{ role: 'user', content: 'Time in Tokyo?' }], tools })
      .finalChatCompletion();
    expect(completion.choices[0]!.finish_reason).toBe('tool_calls');
    expect(completion.choices[0]!.message.tool_calls).toEqual([
      {
        id: 'chatcmpl-tool-9f8e7d',
        type: 'function',
        function: { name: 'get_time', arguments: '{"zone": "Asia/Tokyo"}' },
      },
    ]);
  });

  it('relays logprobs unchanged and keeps every finish reason (length, content_filter)', async () => {
    const token = (text: string, logprob: number) => ({
      token: text,
      logprob,
      bytes: [...Buffer.from(text)],
      top_logprobs: [{ token: text, logprob, bytes: [...Buffer.from(text)] }],
    });
    const tokens = [[token('Once', -0.12), token(' upon', -0.5)], [token('Never', -2.25)]];
    fake.handle(CHAT, async (_request, res) => {
      startStream(res);
      const lp = (content: unknown[]) => ({ content, refusal: null });
      await sendEvent(res, chunk([{ index: 0, role: 'assistant', content: '', logprobs: lp([]) }]));
      await sendEvent(res, chunk([{ index: 1, role: 'assistant', content: '', logprobs: lp([]) }]));
      await sendEvent(res, chunk([{ index: 0, content: 'Once', logprobs: lp([tokens[0]![0]]) }]));
      await sendEvent(res, chunk([{ index: 1, content: 'Never', logprobs: lp(tokens[1]!) }]));
      await sendEvent(res, chunk([{ index: 0, content: ' upon', logprobs: lp([tokens[0]![1]]) }]));
      await sendEvent(res, chunk([{ index: 1, finish_reason: 'content_filter' }]));
      await sendEvent(res, chunk([{ index: 0, finish_reason: 'length' }]));
      await sendEvent(res, chunk([], { prompt_tokens: 8, completion_tokens: 3 }));
      await sendEvent(res, '[DONE]');
      res.end();
    });
    const request = {
      model: 'up-tools',
      n: 2,
      messages: [{ role: 'user' as const, content: 'Tell a story.' }],
      logprobs: true,
      top_logprobs: 1,
      max_tokens: 2,
    };

    const completion = await client.chat.completions.create(request);
    expect(fake.last.body).toMatchObject({ logprobs: true, top_logprobs: 1, n: 2 });
    expect(completion.choices.map((c) => [c.finish_reason, c.message.content, c.logprobs])).toEqual([
      ['length', 'Once upon', { content: tokens[0], refusal: null }],
      ['content_filter', 'Never', { content: tokens[1], refusal: null }],
    ]);

    const streamed = await client.chat.completions.stream(request).finalChatCompletion();
    expect(streamed.choices.map((c) => [c.finish_reason, c.message.content, c.logprobs])).toEqual([
      ['length', 'Once upon', { content: tokens[0], refusal: null }],
      ['content_filter', 'Never', { content: tokens[1], refusal: null }],
    ]);
  });

  it("runs the Vercel AI SDK's tool loop through the relay, handing the tool result upstream", async () => {
    fake.handle(CHAT, async (request, res) => {
      const messages = request.body.messages as Array<{ role: string; content: unknown }>;
      const last = messages.at(-1)!;
      startStream(res);
      if (last.role === 'tool') {
        await sendEvent(
          res,
          chunk([{ role: 'assistant', content: `Upstream says: ${String(last.content)}` }]),
        );
        await sendEvent(res, chunk([{ finish_reason: 'stop' }]));
      } else {
        await sendEvent(
          res,
          chunk([
            {
              role: 'assistant',
              tool_calls: [
                {
                  index: 0,
                  id: 'call_loop1',
                  type: 'function',
                  function: { name: 'get_weather', arguments: '{"city":"Rome","unit":"celsius"}' },
                },
              ],
            },
          ]),
        );
        await sendEvent(res, chunk([{ finish_reason: 'tool_calls' }]));
      }
      await sendEvent(res, chunk([], { prompt_tokens: 10, completion_tokens: 5 }));
      await sendEvent(res, '[DONE]');
      res.end();
    });
    const provider = createOpenAICompatible({
      name: 'model-gateway',
      baseURL: `${stack.baseUrl}/v1`,
      apiKey: stack.apiKey,
    });
    const result = await generateText({
      model: provider.chatModel('up-tools'),
      tools: {
        get_weather: tool({
          description: 'Current weather in a city',
          inputSchema: z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']) }),
          execute: ({ city }) => Promise.resolve(`${city}: 27 degrees, clear`),
        }),
      },
      stopWhen: stepCountIs(3),
      prompt: 'Weather in Rome?',
    });
    expect(result.text).toBe('Upstream says: Rome: 27 degrees, clear');
    const second = fake.last.body.messages as Array<Record<string, unknown>>;
    expect(second.slice(-2)).toEqual([
      expect.objectContaining({
        role: 'assistant',
        tool_calls: [
          {
            id: 'call_loop1',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Rome","unit":"celsius"}' },
          },
        ],
      }),
      { role: 'tool', tool_call_id: 'call_loop1', content: 'Rome: 27 degrees, clear' },
    ]);
  });
});
