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

  it("counts tokens on the model's worker as the message is billed, using none of the key's tokens", async () => {
    const created = await fetch(`${stack.baseUrl}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'counter' }),
    });
    const key = (await created.json()) as { id: string; key: string };
    const counter = new Anthropic({ apiKey: key.key, baseURL: stack.baseUrl, maxRetries: 0 });
    const params = {
      model: 'sim-chat',
      system: 'Be brief.',
      messages: [{ role: 'user' as const, content: 'Count the tokens of this prompt.' }],
    };
    const { input_tokens } = await counter.messages.countTokens(params);
    const withTools = await counter.messages.countTokens({ ...params, tools: [WEATHER_TOOL] });
    // By the alias too: the model that serves it counts.
    const byAlias = await counter.messages.countTokens({ ...params, model: 'claude-sonnet-4-5' });
    expect(byAlias.input_tokens).toBe(input_tokens);
    const usage = async () => {
      const res = await fetch(`${stack.baseUrl}/admin/usage?key=${key.id}`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      return ((await res.json()) as { totals: { prompt_tokens: number; completion_tokens: number } }).totals;
    };
    expect(await usage()).toMatchObject({ prompt_tokens: 0, completion_tokens: 0 });

    const message = await counter.messages.create({ ...params, max_tokens: 8 });
    expect(input_tokens).toBe(message.usage.input_tokens);
    const toolMessage = await counter.messages.create({ ...params, tools: [WEATHER_TOOL], max_tokens: 8 });
    expect(withTools.input_tokens).toBe(toolMessage.usage.input_tokens);
    expect(withTools.input_tokens).toBeGreaterThan(input_tokens);
    expect((await usage()).prompt_tokens).toBe(input_tokens + withTools.input_tokens);

    // No worker for the model: Anthropic's 529, as for a message.
    const overloaded = await client.messages
      .countTokens({ ...params, model: 'sim-idle' })
      .catch((error: unknown) => error);
    expect(overloaded).toBeInstanceOf(OverloadedError);
    expect(overloaded).toMatchObject({ status: 529, error: { error: { type: 'overloaded_error' } } });
    await expect(client.messages.countTokens({ ...params, model: 'no-such-model' })).rejects.toBeInstanceOf(
      Anthropic.NotFoundError,
    );
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

  it("answers refusals from the shared HTTP layer in Anthropic's words, each with a request-id", async () => {
    const hi = { model: 'sim-chat', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };
    const send = (
      headers: Record<string, string>,
      body: string = JSON.stringify(hi),
      path = '/v1/messages',
    ) =>
      fetch(`${stack.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
    const expectRefusal = async (res: Response, status: number, type: string, message: unknown) => {
      expect(res.status).toBe(status);
      expect(res.headers.get('request-id')).toEqual(expect.any(String));
      expect(await res.json()).toEqual({ type: 'error', error: { type, message } });
    };
    const key = { 'x-api-key': stack.apiKey };

    for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
      await expectRefusal(
        await send({}, undefined, path),
        401,
        'authentication_error',
        'x-api-key header is required',
      );
      await expectRefusal(
        await send({ 'x-api-key': 'sk-wrong' }, undefined, path),
        401,
        'authentication_error',
        'invalid x-api-key',
      );
      await expectRefusal(
        await send({ authorization: 'Bearer sk-ant-wrong' }, undefined, path),
        401,
        'authentication_error',
        'invalid x-api-key',
      );
    }
    // An issued key's shape, unknown, and a disabled key: looked up in Redis, refused in the same words.
    await expectRefusal(
      await send({ 'x-api-key': `sk-gw-${'A'.repeat(43)}` }),
      401,
      'authentication_error',
      'invalid x-api-key',
    );
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const issued = (await (
      await fetch(`${stack.baseUrl}/admin/keys`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ name: 'soon-disabled' }),
      })
    ).json()) as { id: string; key: string };
    const disabled = await fetch(`${stack.baseUrl}/admin/keys/${issued.id}`, {
      method: 'PATCH',
      headers: admin,
      body: JSON.stringify({ disabled: true }),
    });
    expect(disabled.status).toBe(200);
    await expectRefusal(
      await send({ 'x-api-key': issued.key }),
      401,
      'authentication_error',
      'invalid x-api-key',
    );
    const stranger = new Anthropic({ apiKey: 'sk-wrong', baseURL: stack.baseUrl, maxRetries: 0 });
    const refused = await stranger.messages
      .create({ model: 'sim-chat', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(refused).toMatchObject({
      status: 401,
      requestID: expect.any(String),
      error: { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } },
    });

    await expectRefusal(
      await send(key, JSON.stringify({ ...hi, model: 'no-such-model' })),
      404,
      'not_found_error',
      expect.stringMatching(/^The model `no-such-model` does not exist/),
    );
    await expectRefusal(
      await send(key, '{"model": "sim-chat", '),
      400,
      'invalid_request_error',
      expect.stringMatching(/^The request body is not valid JSON: ./),
    );
    await expectRefusal(
      await send({ ...key, 'content-type': 'text/plain' }, 'hi'),
      415,
      'invalid_request_error',
      expect.stringMatching(/^Unsupported Content-Type/),
    );
    await expectRefusal(
      await send(key, JSON.stringify({ ...hi, padding: 'x'.repeat(11 * 1024 * 1024) })),
      413,
      'request_too_large',
      'The request body is too large.',
    );
    const overloaded = await send(key, JSON.stringify({ ...hi, model: 'sim-idle' }));
    expect(overloaded.headers.get('retry-after')).toEqual(expect.any(String));
    await expectRefusal(
      overloaded,
      529,
      'overloaded_error',
      expect.stringMatching(/^The model `sim-idle` has no live worker/),
    );

    const created = await fetch(`${stack.baseUrl}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'one-a-minute-raw', rpm: 1 }),
    });
    const limited = { 'x-api-key': ((await created.json()) as { key: string }).key };
    expect((await send(limited)).status).toBe(200);
    const limitedAgain = await send(limited);
    expect(limitedAgain.headers.get('retry-after')).toEqual(expect.any(String));
    await expectRefusal(
      limitedAgain,
      429,
      'rate_limit_error',
      expect.stringMatching(/^Rate limit reached for requests per minute/),
    );

    // The OpenAI routes keep OpenAI's words.
    const openAiJson = await send(key, '{"model": "sim-chat", ', '/v1/chat/completions');
    expect(openAiJson.status).toBe(400);
    expect(await openAiJson.json()).toMatchObject({
      error: { code: 'invalid_json', message: expect.stringMatching(/^We could not parse the JSON body/) },
    });
    const openAi = await send({}, JSON.stringify(hi), '/v1/chat/completions');
    expect(openAi.status).toBe(401);
    expect(openAi.headers.get('request-id')).toBeNull();
    expect(await openAi.json()).toMatchObject({
      error: {
        type: 'invalid_request_error',
        message: expect.stringContaining("You didn't provide an API key"),
      },
    });
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
    const question = { role: 'user', content: 'What is the weather?' };
    const toolUse = {
      role: 'assistant',
      content: [{ type: 'tool_use', id: 'toolu_a1', name: 'get_weather', input: { city: 'Oslo' } }],
    };
    const withTool = (messages: unknown[], tools: unknown[] = [WEATHER_TOOL]) => ({
      model: 'sim-chat',
      max_tokens: 8,
      tools,
      messages,
    });
    // Checked on both routes: the body's rules are the same for a count.
    const everywhere: Array<[unknown, string]> = [
      // A result for an id the previous turn did not use.
      [
        withTool([
          question,
          toolUse,
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_b2', content: 'r' }] },
        ]),
        'messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_b2',
      ],
      // A tool use the next turn leaves unanswered.
      [
        withTool([question, toolUse, { role: 'user', content: 'and?' }]),
        'messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a1',
      ],
      [
        { model: 'sim-chat', max_tokens: 8, messages: [{ role: 'tool', content: 'x' }] },
        "messages.0.role: Input should be 'user' or 'assistant'",
      ],
      [
        withTool(
          [question],
          [{ name: 'f', input_schema: { type: 'object', properties: { a: { type: 'nonsense' } } } }],
        ),
        'tools.0.input_schema: JSON schema is invalid. It must match JSON Schema draft 2020-12',
      ],
      [withTool([question], [{ name: 'f' }]), 'tools.0.input_schema: Field required'],
      [
        withTool([question], [{ name: 'f', input_schema: 'object' }]),
        'tools.0.input_schema: Input should be an object',
      ],
    ];
    const refusals: Array<[string, unknown, string]> = [
      ...cases.map(([body, message]): [string, unknown, string] => ['/v1/messages', body, message]),
      ...everywhere.flatMap(([body, message]): Array<[string, unknown, string]> => {
        const { max_tokens: _bound, ...count } = body as { max_tokens: number };
        return [
          ['/v1/messages', body, message],
          ['/v1/messages/count_tokens', count, message],
        ];
      }),
    ];
    for (const [path, body, message] of refusals) {
      const res = await fetch(`${stack.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearer },
        body: JSON.stringify(body),
      });
      expect({ path, body, status: res.status }).toEqual({ path, body, status: 400 });
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
