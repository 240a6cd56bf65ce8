import Anthropic, { BadRequestError, OverloadedError } from '@anthropic-ai/sdk';
import { Stack } from './support/stack';

const ADMIN_TOKEN = `admin-token-${Math.random().toString(36).slice(2)}-for-messages`;

const CATALOG = {
  models: [
    {
      id: 'sim-chat',
      type: 'chat',
      owned_by: 'model-gateway',
      backend: { kind: 'simulator', mode: 'echo' },
      aliases: ['claude-sonnet-4-5'],
    },
    {
      id: 'sim-chat-words',
      type: 'chat',
      owned_by: 'model-gateway',
      backend: { kind: 'simulator', mode: 'words' },
    },
    // Fails after a few tokens: a stream's `event: error`.
    {
      id: 'sim-fail',
      type: 'chat',
      owned_by: 'model-gateway',
      backend: { kind: 'simulator', mode: 'words', failAfterTokens: 3 },
    },
    // A context of 16 tokens: a longer prompt is refused at the gateway.
    {
      id: 'sim-tiny',
      type: 'chat',
      owned_by: 'model-gateway',
      contextTokens: 16,
      backend: { kind: 'simulator', mode: 'echo' },
    },
    // Declared, never served here: Anthropic's 529 overloaded_error.
    { id: 'sim-idle', type: 'chat', owned_by: 'model-gateway', backend: { kind: 'simulator', mode: 'echo' } },
  ],
};

const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'The weather in a city.',
  input_schema: {
    type: 'object' as const,
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
};

/** The official Anthropic SDK against the real stack: the Messages API's operations and its typed errors. */
describe('the Anthropic SDK against the gateway', () => {
  let stack: Stack;
  let client: Anthropic;

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: CATALOG,
      env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
      appEnv: { 'chat-worker': { WORKER_MODELS: 'sim-chat,sim-chat-words,sim-fail,sim-tiny' } },
      without: ['image-worker'],
      waitForModels: ['sim-chat', 'sim-chat-words', 'sim-tiny'],
    });
    client = new Anthropic({ apiKey: stack.apiKey, baseURL: stack.baseUrl, maxRetries: 0 });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('creates a message', async () => {
    const message = await client.messages.create({
      model: 'sim-chat',
      max_tokens: 64,
      system: 'You are a mirror.',
      messages: [{ role: 'user', content: 'Reflect this sentence back, please.' }],
    });
    expect(message).toEqual({
      id: expect.stringMatching(/^msg_/),
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text: 'Reflect this sentence back, please.' }],
      model: 'sim-chat',
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: {
        input_tokens: expect.any(Number),
        output_tokens: expect.any(Number),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    });
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    const stopped = await client.messages.create({
      model: 'sim-chat',
      max_tokens: 64,
      stop_sequences: ['STOP'],
      messages: [{ role: 'user', content: 'Say this and STOP there.' }],
    });
    expect(stopped).toMatchObject({
      content: [{ type: 'text', text: 'Say this and ' }],
      stop_reason: 'stop_sequence',
      stop_sequence: 'STOP',
    });
  });

  it('serves a model by its alias on every route, naming the model that served, and lists the alias', async () => {
    const message = await client.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'Who answers?' }],
    });
    expect(message.model).toBe('sim-chat');
    const chat = await stack.post('/v1/chat/completions', {
      model: 'claude-sonnet-4-5',
      messages: [{ role: 'user', content: 'And here?' }],
    });
    expect(chat.headers.get('x-served-model')).toBe('sim-chat');
    expect(((await chat.json()) as { model: string }).model).toBe('sim-chat');
    const models = await fetch(`${stack.baseUrl}/v1/models`, { headers: stack.headers() });
    const listed = ((await models.json()) as { data: Array<{ id: string; type: string }> }).data;
    expect(listed).toContainEqual(
      expect.objectContaining({ id: 'claude-sonnet-4-5', type: 'chat/compilations' }),
    );
  });

  it('streams a message: text deltas, then finalMessage() with the stop reason and usage', async () => {
    const stream = client.messages.stream({
      model: 'sim-chat-words',
      max_tokens: 12,
      messages: [{ role: 'user', content: 'Tell me something.' }],
    });
    const deltas: string[] = [];
    stream.on('text', (text) => deltas.push(text));
    const message = await stream.finalMessage();
    expect(deltas.length).toBeGreaterThan(1);
    expect(message.content).toEqual([{ type: 'text', text: deltas.join('') }]);
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.usage.output_tokens).toBe(12);
    expect(message.usage.input_tokens).toBeGreaterThan(0);
  });

  it('ends a stream that fails after its first tokens with an error event, which the SDK raises', async () => {
    const stream = client.messages.stream({
      model: 'sim-fail',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Start, then fail.' }],
    });
    const deltas: string[] = [];
    stream.on('text', (text) => deltas.push(text));
    const failure = await stream.finalMessage().catch((error: unknown) => error);
    expect(deltas.length).toBeGreaterThan(0);
    expect(failure).toBeInstanceOf(Anthropic.APIError);
    expect(failure).toMatchObject({ error: { type: 'error', error: { type: 'api_error' } } });
  });

  it('answers with the result after a tool-use round trip, streamed and not', async () => {
    const question: Anthropic.MessageParam = { role: 'user', content: 'What is the get_weather in Paris?' };
    const first = await client.messages.create({
      model: 'sim-chat',
      max_tokens: 200,
      tools: [WEATHER_TOOL],
      messages: [question],
    });
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((block) => block.type === 'tool_use')!;
    expect(use).toMatchObject({ id: expect.stringMatching(/^toolu_/), name: 'get_weather' });
    expect(typeof (use.input as { city: unknown }).city).toBe('string');

    const streamed = await client.messages
      .stream({ model: 'sim-chat', max_tokens: 200, tools: [WEATHER_TOOL], messages: [question] })
      .finalMessage();
    expect(streamed.content.find((block) => block.type === 'tool_use')).toMatchObject({
      name: 'get_weather',
    });

    const answer = await client.messages.create({
      model: 'sim-chat',
      max_tokens: 200,
      tools: [WEATHER_TOOL],
      messages: [
        question,
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: use.id, content: 'Sunny, 24 degrees' },
            { type: 'text', text: 'Thanks!' },
          ],
        },
      ],
    });
    expect(answer.stop_reason).toBe('end_turn');
    expect(answer.content[0]).toMatchObject({
      type: 'text',
      text: expect.stringContaining('Sunny, 24 degrees'),
    });
  });

  it('counts tokens as the message is billed', async () => {
    const params = {
      model: 'sim-chat',
      system: 'Be brief.',
      messages: [{ role: 'user' as const, content: 'Count the tokens of this prompt.' }],
    };
    const { input_tokens } = await client.messages.countTokens(params);
    const message = await client.messages.create({ ...params, max_tokens: 8 });
    expect(input_tokens).toBe(message.usage.input_tokens);
    const withTools = await client.messages.countTokens({ ...params, tools: [WEATHER_TOOL] });
    expect(withTools.input_tokens).toBeGreaterThan(input_tokens);
  });

  it('raises its typed errors: authentication, not found, bad request, rate limit, overloaded', async () => {
    const ask = (model: string, sdk = client) =>
      sdk.messages.create({ model, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    const stranger = new Anthropic({ apiKey: 'sk-wrong', baseURL: stack.baseUrl, maxRetries: 0 });
    await expect(ask('sim-chat', stranger)).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    await expect(ask('no-such-model')).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    const overloaded = await ask('sim-idle').catch((error: unknown) => error);
    expect(overloaded).toBeInstanceOf(OverloadedError);
    expect(overloaded).toMatchObject({
      status: 529,
      error: { type: 'error', error: { type: 'overloaded_error' } },
    });

    const bad = await client.messages
      .create({ model: 'sim-chat', max_tokens: 8, messages: [{ role: 'assistant', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(bad).toBeInstanceOf(BadRequestError);
    expect(bad).toMatchObject({ status: 400, error: { error: { type: 'invalid_request_error' } } });
    expect((bad as BadRequestError).requestID).toEqual(expect.any(String));

    const created = await fetch(`${stack.baseUrl}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'one-a-minute', rpm: 1 }),
    });
    const limited = new Anthropic({
      apiKey: ((await created.json()) as { key: string }).key,
      baseURL: stack.baseUrl,
      maxRetries: 0,
    });
    await ask('sim-chat', limited);
    await expect(ask('sim-chat', limited)).rejects.toBeInstanceOf(Anthropic.RateLimitError);
  });

  it("refuses a prompt over the model's context window at the gateway, in Anthropic's error shape", async () => {
    const tooLong = await client.messages
      .create({
        model: 'sim-tiny',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'y'.repeat(16 * 256 + 1) }],
      })
      .catch((error: unknown) => error);
    expect(tooLong).toBeInstanceOf(BadRequestError);
    expect(tooLong).toMatchObject({
      status: 400,
      error: { type: 'error', error: { type: 'invalid_request_error' } },
    });
    // "at least": the gateway's lower bound refused it before a job was queued, not the worker's exact count.
    expect((tooLong as BadRequestError).message).toContain('at least 17 tokens');
    const fits = await client.messages.create({
      model: 'sim-tiny',
      max_tokens: 8,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(fits.stop_reason).toBe('end_turn');
  });

  it('refuses bad input with Anthropic 400s naming the field, and takes the key from x-api-key or Bearer', async () => {
    const post = (body: unknown, headers: Record<string, string>) =>
      fetch(`${stack.baseUrl}/v1/messages?beta=true`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
        body: JSON.stringify(body),
      });
    const bearer = { authorization: `Bearer ${stack.apiKey}` };
    const cases: Array<[unknown, string]> = [
      [{ model: 'sim-chat', messages: [{ role: 'user', content: 'x' }] }, 'max_tokens: Field required'],
      [
        {
          model: 'sim-chat',
          max_tokens: 8,
          messages: [
            { role: 'assistant', content: 'x' },
            { role: 'user', content: 'y' },
          ],
        },
        'the first message must use the "user" role',
      ],
      [
        {
          model: 'sim-chat',
          max_tokens: 8,
          messages: [
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_nope', content: 'r' }] },
          ],
        },
        'unexpected `tool_use_id`',
      ],
      [
        {
          model: 'sim-chat',
          max_tokens: 8,
          messages: [{ role: 'user', content: 'x' }],
          tools: [{ name: 'f', input_schema: { type: 'array' } }],
        },
        'tools.0.input_schema.type',
      ],
    ];
    for (const [body, message] of cases) {
      const res = await post(body, bearer);
      expect(res.status).toBe(400);
      expect(res.headers.get('request-id')).toEqual(expect.any(String));
      const error = (await res.json()) as { type: string; error: { type: string; message: string } };
      expect(error).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message: expect.stringContaining(message) },
      });
    }
    const malformed = await fetch(`${stack.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer },
      body: '{"model": "sim-chat", ',
    });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    const none = await post(cases[0]![0], {});
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const byApiKey = await post(
      { model: 'sim-chat', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
      {
        'x-api-key': stack.apiKey,
      },
    );
    expect(byApiKey.status).toBe(200);
    // Metrics count the route as its own.
    const metrics = await (await fetch(`${stack.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/gateway_http_requests_total\{[^}]*route="\/v1\/messages"[^}]*status="400"/);
    expect(metrics).toMatch(/route="\/v1\/messages\/count_tokens"/);
    // The OpenAI routes keep OpenAI's shape.
    const openAi = await fetch(`${stack.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(await openAi.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
  });
});
