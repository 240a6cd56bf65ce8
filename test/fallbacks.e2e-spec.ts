import OpenAI from 'openai';
import { GATEWAY_METRICS } from '@mgw/observability';
import { FakeOpenAIUpstream, json } from './support/fake-openai-upstream';
import { scrape, valueOf } from './support/prometheus';
import { readSse } from './support/sse';
import { Stack } from './support/stack';

const ADMIN_TOKEN = `admin-fallbacks-${Math.random().toString(36).slice(2)}-e2e-token`;
const SERVED = 'x-served-model';
const KEEPALIVE_MS = 2500;
/** Longer than the keep-alive bound: a stream waiting this long has opened (and is committed) already. */
const LATE_FAILURE_MS = 5000;
/** A scale-to-zero model's wait for its first worker (none ever starts here). */
const COLD_WAIT_MS = 4000;

type ApiError = InstanceType<typeof OpenAI.APIError>;

interface UsageRow {
  model: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
}

/**
 * Model fallbacks on real processes: a model with no worker, an upstream answering 500, an upstream refusing
 * the request, and keys scoped to models. `up-broken` falls back to `primary-none` (never served: skipped as
 * unavailable) and then `sim-backup`.
 */
describe('model fallbacks', () => {
  let fake: FakeOpenAIUpstream;
  let stack: Stack;
  let client: OpenAI;

  const admin = (init: RequestInit = {}): RequestInit => ({
    ...init,
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
  });

  async function createKey(models: string[]): Promise<{ id: string; key: string }> {
    const res = await fetch(
      `${stack.baseUrl}/admin/keys`,
      admin({ method: 'POST', body: JSON.stringify({ name: 'scoped', models }) }),
    );
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string; key: string };
  }

  const clientFor = (apiKey: string) =>
    new OpenAI({ apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0, timeout: 30_000 });

  const fallbacks = async (labels: Record<string, string>) =>
    valueOf((await scrape(`${stack.baseUrl}/metrics`)).samples, GATEWAY_METRICS.fallbacks, labels);

  beforeAll(async () => {
    fake = await FakeOpenAIUpstream.start();
    // failureThreshold: the upstream pool would take a server that answers every request with 500 out of
    // service after 3 (and the model then answers 503 model_unavailable until a probe finds it back); this
    // spec is about falling back from each answer, so the server stays in service throughout.
    const upstream = (path: string) => ({
      kind: 'openai',
      baseUrl: fake.baseUrl.replace(/\/v1$/, `${path}/v1`),
      failureThreshold: 100,
    });
    fake.handle('/broken/v1/chat/completions', (_request, res) =>
      json(res, 500, { error: { message: 'internal failure at /srv/model', type: 'server_error' } }),
    );
    fake.handle('/rejects/v1/chat/completions', (_request, res) =>
      json(res, 400, {
        error: {
          message: 'temperature is not supported here',
          type: 'invalid_request_error',
          param: 'temperature',
          code: null,
        },
      }),
    );
    fake.handle('/late/v1/chat/completions', async (_request, res) => {
      await new Promise((resolve) => setTimeout(resolve, LATE_FAILURE_MS));
      json(res, 500, { error: { message: 'late failure', type: 'server_error' } });
    });
    const chat = (id: string, backend: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      id,
      type: 'chat',
      owned_by: 'e2e',
      backend,
      ...extra,
    });
    stack = await Stack.start({
      catalog: {
        models: [
          chat('sim-backup', { kind: 'simulator', mode: 'echo' }),
          chat('primary-none', { kind: 'simulator', mode: 'echo' }, { fallbacks: ['sim-backup'] }),
          chat('up-broken', upstream('/broken'), { fallbacks: ['primary-none', 'sim-backup'] }),
          chat('up-rejects', upstream('/rejects'), { contextTokens: 64, fallbacks: ['sim-backup'] }),
          chat('up-late', upstream('/late'), { fallbacks: ['sim-backup'] }),
          chat(
            'cold',
            { kind: 'simulator', mode: 'echo' },
            { scaleToZero: { maxWaitMs: COLD_WAIT_MS }, fallbacks: ['sim-backup'] },
          ),
          { id: 'sim-image', type: 'image', owned_by: 'e2e', backend: { kind: 'simulator' } },
          {
            id: 'img-none',
            type: 'image',
            owned_by: 'e2e',
            backend: { kind: 'simulator' },
            fallbacks: ['sim-image'],
          },
        ],
      },
      env: { SSE_KEEPALIVE_MS: String(KEEPALIVE_MS) },
      appEnv: {
        gateway: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
        'chat-worker': { WORKER_MODELS: 'sim-backup,up-broken,up-rejects,up-late' },
        'image-worker': { WORKER_MODELS: 'sim-image' },
      },
      waitForModels: ['sim-backup', 'up-broken', 'up-rejects', 'up-late', 'sim-image'],
    });
    client = clientFor(stack.apiKey);
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
    await fake?.stop();
  });

  it('serves a model with no live worker by its fallback: JSON and a stream, naming the fallback', async () => {
    const { data, response } = await client.chat.completions
      .create({ model: 'primary-none', messages: [{ role: 'user', content: 'hello fallback' }] })
      .withResponse();
    expect(data.model).toBe('sim-backup');
    expect(data.choices[0]!.message.content).toBe('hello fallback');
    expect(response.headers.get(SERVED)).toBe('sim-backup');

    const { data: stream, response: streamed } = await client.chat.completions
      .create({
        model: 'primary-none',
        stream: true,
        messages: [{ role: 'user', content: 'streamed fallback' }],
      })
      .withResponse();
    expect(streamed.headers.get(SERVED)).toBe('sim-backup');
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(1);
    expect(new Set(chunks.map((chunk) => chunk.model))).toEqual(new Set(['sim-backup']));
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('streamed fallback');

    expect(
      await fallbacks({ from: 'primary-none', to: 'sim-backup', reason: 'unavailable' }),
    ).toBeGreaterThanOrEqual(2);
  });

  it('lists a model without a live worker while a fallback the key may use serves it', async () => {
    const listed = async (apiKey: string) => {
      const res = await fetch(`${stack.baseUrl}/v1/models`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      return ((await res.json()) as { data: { id: string }[] }).data.map((model) => model.id).sort();
    };
    expect(await listed(stack.apiKey)).toEqual([
      'cold',
      'img-none',
      'primary-none',
      'sim-backup',
      'sim-image',
      'up-broken',
      'up-late',
      'up-rejects',
    ]);
    const retrieved = await fetch(`${stack.baseUrl}/v1/models/primary-none`, { headers: stack.headers() });
    expect(retrieved.status).toBe(200);

    const noneOnly = (await createKey(['primary-none'])).key;
    expect(await listed(noneOnly)).toEqual([]);
    const hidden = await fetch(`${stack.baseUrl}/v1/models/primary-none`, {
      headers: { authorization: `Bearer ${noneOnly}` },
    });
    expect(hidden.status).toBe(404);
  });

  it('serves an image model with no live worker by its fallback, named in the header', async () => {
    const res = await stack.post('/v1/images/generations', {
      model: 'img-none',
      prompt: 'a lighthouse',
      size: '256x256',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get(SERVED)).toBe('sim-image');
    const body = (await res.json()) as { data: { b64_json: string }[] };
    expect(body.data).toHaveLength(1);
  });

  it('serves requests whose upstream answers 500 by the fallback: no client error, JSON and streams', async () => {
    const before = fake.requests.filter((r) => r.path.startsWith('/broken/')).length;
    const runs = Array.from({ length: 6 }, async (_, i) => {
      const content = `broken ${i}`;
      if (i % 2 === 0) {
        const { data, response } = await client.chat.completions
          .create({ model: 'up-broken', messages: [{ role: 'user', content }] })
          .withResponse();
        expect([data.model, response.headers.get(SERVED), data.choices[0]!.message.content]).toEqual([
          'sim-backup',
          'sim-backup',
          content,
        ]);
        return;
      }
      const { data: stream, response } = await client.chat.completions
        .create({ model: 'up-broken', stream: true, messages: [{ role: 'user', content }] })
        .withResponse();
      expect(response.headers.get(SERVED)).toBe('sim-backup');
      let text = '';
      for await (const chunk of stream) {
        expect(chunk.model).toBe('sim-backup');
        text += chunk.choices[0]?.delta.content ?? '';
      }
      expect(text).toBe(content);
    });
    const outcomes = await Promise.allSettled(runs);
    expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
    // The broken upstream was really asked (the requests were not sent straight to the fallback).
    expect(fake.requests.filter((r) => r.path.startsWith('/broken/')).length).toBeGreaterThan(before);
    // up-broken → primary-none (no worker: skipped) → sim-backup, every time.
    expect(await fallbacks({ from: 'primary-none', to: 'sim-backup' })).toBeGreaterThanOrEqual(6 + 2);
    expect(await fallbacks({ from: 'up-broken', to: 'primary-none' })).toBe(6);
  });

  it('never takes a key to a model it may not use: the primary-only key gets the primary’s own error', async () => {
    const brokenOnly = clientFor((await createKey(['up-broken'])).key);
    const asked = fake.requests.filter((r) => r.path.startsWith('/broken/')).length;
    const failure = await brokenOnly.chat.completions
      .create({ model: 'up-broken', messages: [{ role: 'user', content: 'no way out' }] })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect([(failure as ApiError).status, (failure as ApiError).code]).toEqual([502, 'upstream_error']);
    expect(fake.requests.filter((r) => r.path.startsWith('/broken/')).length).toBe(asked + 1);

    const noneOnly = clientFor((await createKey(['primary-none'])).key);
    const unavailable = await noneOnly.chat.completions
      .create({ model: 'primary-none', stream: true, messages: [{ role: 'user', content: 'still no way' }] })
      .catch((error: unknown) => error);
    expect([(unavailable as ApiError).status, (unavailable as ApiError).code]).toEqual([
      503,
      'model_unavailable',
    ]);
  });

  it('answers a stream that no model could serve with a plain error status, not an event in a 200', async () => {
    // up-broken fails, primary-none has no worker, sim-backup is out of this key's reach.
    const key = await createKey(['up-broken', 'primary-none']);
    const res = await fetch(`${stack.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'up-broken', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(502);
    expect(res.headers.get(SERVED)).toBeNull();
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('upstream_error');
  });

  it('records usage once, under the model that served, for a key that may use both', async () => {
    const key = await createKey(['up-broken', 'sim-backup']);
    const { data } = await clientFor(key.key)
      .chat.completions.create({ model: 'up-broken', messages: [{ role: 'user', content: 'count me once' }] })
      .withResponse();
    expect(data.model).toBe('sim-backup');
    const res = await fetch(`${stack.baseUrl}/admin/usage?key=${key.id}`, admin());
    expect(res.status).toBe(200);
    const usage = (await res.json()) as { data: UsageRow[]; totals: { requests: number } };
    expect(usage.data.map((row) => row.model)).toEqual(['sim-backup']);
    expect(usage.data[0]).toMatchObject({
      requests: 1,
      prompt_tokens: data.usage!.prompt_tokens,
      completion_tokens: data.usage!.completion_tokens,
    });
    expect(usage.totals.requests).toBe(1);
  });

  it('does not fall back from a request the model refuses (400), at the gateway or upstream', async () => {
    const before = await fallbacks({ from: 'up-rejects' });
    // The gateway's own check: too long for up-rejects' context, though sim-backup could take it.
    const tooLong = await client.chat.completions
      .create({ model: 'up-rejects', messages: [{ role: 'user', content: 'word '.repeat(20_000) }] })
      .catch((error: unknown) => error);
    expect([(tooLong as ApiError).status, (tooLong as ApiError).code]).toEqual([
      400,
      'context_length_exceeded',
    ]);
    // The upstream's refusal, for JSON and for a stream.
    for (const stream of [false, true]) {
      const refused = await client.chat.completions
        .create({
          model: 'up-rejects',
          stream,
          temperature: 0.5,
          messages: [{ role: 'user', content: 'hi' }],
        })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.APIError);
      expect([(refused as ApiError).status, (refused as ApiError).param]).toEqual([400, 'temperature']);
    }
    expect(await fallbacks({ from: 'up-rejects' })).toBe(before);
  });

  it('waits for a scale-to-zero model’s cold start, then falls back; a stream before its 200 commits it', async () => {
    const sent = Date.now();
    const json = client.chat.completions
      .create({ model: 'cold', messages: [{ role: 'user', content: 'cold json' }] })
      .then((completion) => ({ completion, waited: Date.now() - sent }));

    const streamed = Date.now();
    const res = await stack.post('/v1/chat/completions', {
      model: 'cold',
      stream: true,
      messages: [{ role: 'user', content: 'cold stream' }],
    });
    expect([res.status, res.headers.get(SERVED)]).toEqual([200, 'sim-backup']);
    // Half the keep-alive bound, not the model's whole wait.
    const waited = Date.now() - streamed;
    expect(waited).toBeGreaterThanOrEqual(KEEPALIVE_MS / 2 - 100);
    expect(waited).toBeLessThan(COLD_WAIT_MS);
    const events: string[] = [];
    for await (const event of readSse(res.body!)) events.push(event.data);
    expect(events.at(-1)).toBe('[DONE]');
    expect(
      events.slice(0, -1).every((e) => (JSON.parse(e) as { model: string }).model === 'sim-backup'),
    ).toBe(true);
    // JSON waits the model's whole cold start, then the fallback serves.
    const { completion, waited: jsonWaited } = await json;
    expect(completion.model).toBe('sim-backup');
    expect(jsonWaited).toBeGreaterThanOrEqual(COLD_WAIT_MS - 100);
  }, 30_000);

  it('commits a stream to its model once the 200 went out: a later failure is its error event', async () => {
    // JSON waits for the whole answer, so the late failure is still served by the fallback.
    const json = client.chat.completions.create({
      model: 'up-late',
      messages: [{ role: 'user', content: 'late json' }],
    });

    const started = Date.now();
    const res = await stack.post('/v1/chat/completions', {
      model: 'up-late',
      stream: true,
      messages: [{ role: 'user', content: 'late stream' }],
    });
    // Headers came after the keep-alive bound, before the upstream's failure, naming the model on duty.
    expect(res.status).toBe(200);
    expect(res.headers.get(SERVED)).toBe('up-late');
    expect(Date.now() - started).toBeGreaterThanOrEqual(KEEPALIVE_MS - 100);
    const events: string[] = [];
    for await (const event of readSse(res.body!)) events.push(event.data);
    expect(events).toHaveLength(2);
    expect(JSON.parse(events[0]!)).toMatchObject({ error: { code: 'upstream_error' } });
    expect(events[1]).toBe('[DONE]');
    expect((await json).model).toBe('sim-backup');
  }, 30_000);
});
