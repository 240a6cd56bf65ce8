import { collectSse } from './support/sse';
import { Stack } from './support/stack';

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

function expectErrorShape(body: unknown): asserts body is ErrorBody {
  expect(Object.keys(body as object)).toEqual(['error']);
  const { error } = body as ErrorBody;
  expect(Object.keys(error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(typeof error.message).toBe('string');
  expect(typeof error.type).toBe('string');
  expect(error.param === null || typeof error.param === 'string').toBe(true);
  expect(error.code === null || typeof error.code === 'string').toBe(true);
}

const chatBody = { model: 'sim-chat', messages: [{ role: 'user', content: 'hello contract' }] };

/** Raw HTTP: status codes, error bodies and SSE framing exactly as the contract states. */
describe('HTTP contract', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await Stack.start({
      env: { BODY_LIMIT_BYTES: String(64 * 1024) },
      // `orphan-chat` is declared, but no worker serves it.
      catalog: {
        models: [
          {
            id: 'sim-chat',
            type: 'chat',
            owned_by: 'model-gateway',
            backend: { kind: 'simulator', mode: 'echo' },
          },
          { id: 'orphan-chat', type: 'chat', owned_by: 'nobody', backend: { kind: 'simulator' } },
          // Ids as Ollama and Hugging Face spell them: the queue name must encode them.
          {
            id: 'acme/llama3:8b',
            type: 'chat',
            owned_by: 'acme',
            backend: { kind: 'simulator', mode: 'echo' },
          },
          { id: 'sim-image', type: 'image', owned_by: 'model-gateway', backend: { kind: 'simulator' } },
        ],
      },
      appEnv: { 'chat-worker': { WORKER_MODELS: 'sim-chat,acme/llama3:8b' } },
      waitForModels: ['sim-chat', 'sim-image', 'acme/llama3:8b'],
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('streams SSE: headers at once, one data line per chunk, final usage chunk, then [DONE]', async () => {
    const res = await stack.post('/v1/chat/completions', { ...chatBody, stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toContain('no-cache');
    expect(res.headers.get('x-request-id')).toMatch(/^[a-f0-9]{32}$/);
    const events = await collectSse(res.body!);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Record<string, unknown>);
    const ids = new Set(chunks.map((c) => c.id));
    expect(ids).toEqual(new Set([`chatcmpl-${res.headers.get('x-request-id')}`]));
    const final = chunks.at(-1) as { choices: unknown[]; usage: Record<string, number> };
    expect(final.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]);
    expect(final.usage.total_tokens).toBe(final.usage.prompt_tokens! + final.usage.completion_tokens!);
    for (const chunk of chunks.slice(0, -1)) {
      expect(Object.keys(chunk).sort()).toEqual([
        'choices',
        'created',
        'id',
        'model',
        'object',
        'system_fingerprint',
      ]);
      expect(chunk).toMatchObject({ object: 'chat.completion.chunk', model: 'sim-chat' });
      expect(chunk.choices).toEqual([
        {
          index: 0,
          delta: expect.objectContaining({ content: expect.any(String) }),
          logprobs: null,
          finish_reason: null,
        },
      ]);
    }
  });

  it('answers 200 with the chat.completion object when not streaming', async () => {
    const res = await stack.post('/v1/chat/completions', chatBody);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    const body = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual([
      'choices',
      'created',
      'id',
      'model',
      'object',
      'system_fingerprint',
      'usage',
    ]);
  });

  it.each([
    ['temperature above 2', { ...chatBody, temperature: 2.01 }, 'temperature'],
    ['temperature below 0', { ...chatBody, temperature: -0.01 }, 'temperature'],
    ['presence_penalty above 2', { ...chatBody, presence_penalty: 2.5 }, 'presence_penalty'],
    ['frequency_penalty below -2', { ...chatBody, frequency_penalty: -3 }, 'frequency_penalty'],
    ['five stop sequences', { ...chatBody, stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
    ['a non-boolean stream', { ...chatBody, stream: 'yes' }, 'stream'],
    ['a string temperature', { ...chatBody, temperature: '1' }, 'temperature'],
    ['n of zero', { ...chatBody, n: 0 }, 'n'],
    ['fractional max_tokens', { ...chatBody, max_tokens: 1.5 }, 'max_tokens'],
    ['no messages', { model: 'sim-chat' }, 'messages'],
    ['an empty message list', { model: 'sim-chat', messages: [] }, 'messages'],
    [
      'an unknown role',
      { model: 'sim-chat', messages: [{ role: 'robot', content: 'x' }] },
      'messages[0].role',
    ],
    [
      'numeric content',
      { model: 'sim-chat', messages: [{ role: 'user', content: 5 }] },
      'messages[0].content',
    ],
    ['an unknown field', { ...chatBody, tools: [] }, 'tools'],
    ['a numeric model', { ...chatBody, model: 7 }, 'model'],
  ])('rejects chat with %s: 400 naming the param', async (_name, body, param) => {
    const res = await stack.post('/v1/chat/completions', body);
    expect(res.status).toBe(400);
    const json: unknown = await res.json();
    expectErrorShape(json);
    expect(json.error).toMatchObject({ type: 'invalid_request_error', param });
    expect(json.error.message).toContain(param);
  });

  it.each([
    ['a prompt over 4000 characters', { model: 'sim-image', prompt: 'x'.repeat(4001) }, 'prompt'],
    ['an empty prompt', { model: 'sim-image', prompt: '' }, 'prompt'],
    ['n of 11', { model: 'sim-image', prompt: 'x', n: 11 }, 'n'],
    ['an unlisted size', { model: 'sim-image', prompt: 'x', size: '100x100' }, 'size'],
    ['response_format url', { model: 'sim-image', prompt: 'x', response_format: 'url' }, 'response_format'],
  ])('rejects images with %s: 400 naming the param', async (_name, body, param) => {
    const res = await stack.post('/v1/images/generations', body);
    expect(res.status).toBe(400);
    const json: unknown = await res.json();
    expectErrorShape(json);
    expect(json.error.param).toBe(param);
  });

  it('accepts the bounds themselves', async () => {
    const res = await stack.post('/v1/images/generations', {
      prompt: 'y'.repeat(4000),
      size: '256x256',
      user: 'u-1',
    });
    expect(res.status).toBe(200);
    const chat = await stack.post('/v1/chat/completions', {
      ...chatBody,
      temperature: 2,
      presence_penalty: -2,
      frequency_penalty: 2,
      stop: ['q', 'w', 'e', 'r'],
      messages: [
        { role: 'developer', content: [{ type: 'text', text: 'parts work' }] },
        ...chatBody.messages,
      ],
    });
    expect(chat.status).toBe(200);
  });

  it('answers malformed JSON, wrong media types and oversized bodies with the error shape', async () => {
    const malformed = await stack.post('/v1/chat/completions', '{"messages": [');
    expect(malformed.status).toBe(400);
    expectErrorShape(await malformed.json());

    const plain = await stack.post('/v1/chat/completions', 'hello', {
      headers: stack.headers({ 'content-type': 'text/plain' }),
    });
    expect(plain.status).toBe(415);
    expectErrorShape(await plain.json());

    const huge = await stack.post('/v1/chat/completions', {
      ...chatBody,
      messages: [{ role: 'user', content: 'z'.repeat(70_000) }],
    });
    expect(huge.status).toBe(413);
    const body: unknown = await huge.json();
    expectErrorShape(body);
    expect(body.error.code).toBe('request_too_large');
  });

  it('refuses missing and wrong keys with 401 on every protected route', async () => {
    for (const [method, path] of [
      ['POST', '/v1/chat/completions'],
      ['POST', '/v1/images/generations'],
      ['GET', '/v1/models'],
    ] as const) {
      const missing = await fetch(`${stack.baseUrl}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: method === 'POST' ? JSON.stringify(chatBody) : undefined,
      });
      expect(missing.status).toBe(401);
      expectErrorShape(await missing.json());
      for (const authorization of [
        'Bearer wrong-key-1234',
        stack.apiKey,
        `Basic ${stack.apiKey}`,
        `Bearer ${'k'.repeat(5000)}`,
      ]) {
        const res = await fetch(`${stack.baseUrl}${path}`, {
          method,
          headers: { 'content-type': 'application/json', authorization },
          body: method === 'POST' ? JSON.stringify(chatBody) : undefined,
        });
        expect(res.status).toBe(401);
        const json: unknown = await res.json();
        expectErrorShape(json);
        expect(json.error.code).toBe('invalid_api_key');
      }
    }
    const lowercase = await stack.post('/v1/chat/completions', chatBody, {
      headers: { 'content-type': 'application/json', authorization: `bearer ${stack.apiKey}` },
    });
    expect(lowercase.status).toBe(200);
  });

  it('404s unknown models and URLs, 503s a declared model with no live worker', async () => {
    const unknown = await stack.post('/v1/chat/completions', { ...chatBody, model: 'gpt-nothing' });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as ErrorBody).error).toMatchObject({
      code: 'model_not_found',
      param: 'model',
    });

    const started = Date.now();
    const orphan = await stack.post('/v1/chat/completions', { ...chatBody, model: 'orphan-chat' });
    expect(orphan.status).toBe(503);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(orphan.headers.get('retry-after')).not.toBeNull();
    expect(((await orphan.json()) as ErrorBody).error).toMatchObject({ code: 'model_unavailable' });

    const models = (await (
      await fetch(`${stack.baseUrl}/v1/models`, { headers: stack.headers() })
    ).json()) as {
      data: { id: string }[];
    };
    expect(models.data.map((m) => m.id)).not.toContain('orphan-chat');

    const nowhere = await fetch(`${stack.baseUrl}/v2/anything`, { headers: stack.headers() });
    expect(nowhere.status).toBe(404);
    expectErrorShape(await nowhere.json());
  });

  it('serves models whose ids contain slashes and colons', async () => {
    const res = await stack.post('/v1/chat/completions', { ...chatBody, model: 'acme/llama3:8b' });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      model: 'acme/llama3:8b',
      choices: [{ message: { content: 'hello contract' } }],
    });
    const one = await fetch(`${stack.baseUrl}/v1/models/${encodeURIComponent('acme/llama3:8b')}`, {
      headers: stack.headers(),
    });
    expect(await one.json()).toMatchObject({
      id: 'acme/llama3:8b',
      object: 'model',
      type: 'chat/compilations',
    });
  });

  it('reports health and readiness without a key', async () => {
    expect((await fetch(`${stack.baseUrl}/healthz`)).status).toBe(200);
    const ready = await fetch(`${stack.baseUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { redis: 'up', registry: 'up' } });
  });
});
