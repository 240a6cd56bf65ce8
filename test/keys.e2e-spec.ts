import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { SCHEDULING_BANDS } from '@mgw/contracts';
import { freePort } from './support/free-port';
import { readSse } from './support/sse';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const run = promisify(execFile);
const ROOT = resolve(__dirname, '..');
const ADMIN_TOKEN = `admin-${'x'.repeat(8)}-${Math.random().toString(36).slice(2)}-token`;
/** A sentence long enough that the slow models take several seconds to echo it. */
const LONG_TEXT = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ');

const CATALOG = {
  models: [
    { id: 'sim-chat', type: 'chat', owned_by: 'model-gateway', backend: { kind: 'simulator', mode: 'echo' } },
    {
      id: 'sim-chat-words',
      type: 'chat',
      owned_by: 'model-gateway',
      backend: { kind: 'simulator', mode: 'words' },
    },
    { id: 'sim-image', type: 'image', owned_by: 'model-gateway', backend: { kind: 'simulator' } },
    {
      id: 'slow-chat',
      type: 'chat',
      owned_by: 'model-gateway',
      backend: { kind: 'simulator', mode: 'echo', tokensPerSecond: 15 },
    },
    {
      id: 'queue-chat',
      type: 'chat',
      owned_by: 'model-gateway',
      maxQueueDepth: 1,
      backend: { kind: 'simulator', mode: 'echo', tokensPerSecond: 15 },
    },
  ],
};

interface KeyView {
  id: string;
  object: string;
  name: string;
  prefix: string;
  models: string[] | null;
  rpm: number | null;
  tpm: number | null;
  max_concurrent: number | null;
  priority: string;
  disabled: boolean;
  key?: string;
}

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
}

const until = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> =>
  waitFor(what, probe, timeoutMs);

// A change made on one replica reaches the other through `keys:changed`; without it the other replica's
// cache (KEY_CACHE_MS, a minute here) would keep the old record. Seconds tell the two apart on any machine.
const PROPAGATION_MS = 5_000;

/** Keys, limits and usage against the real stack with TWO gateway replicas sharing one Redis. */
describe('API keys, limits and usage across two gateways', () => {
  let stack: Stack;
  let a: string;
  let b: string;
  const issued: string[] = [];

  const admin = (init: RequestInit = {}, token = ADMIN_TOKEN): RequestInit => ({
    ...init,
    headers: {
      authorization: `Bearer ${token}`,
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
  });

  async function createKey(spec: Record<string, unknown>, base = a): Promise<KeyView & { key: string }> {
    const res = await fetch(`${base}/admin/keys`, admin({ method: 'POST', body: JSON.stringify(spec) }));
    const body = (await res.json()) as KeyView & { key: string };
    expect(res.status).toBe(201);
    issued.push(body.key);
    return body;
  }

  function chat(
    base: string,
    key: string,
    body: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<Response> {
    return fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hello there' }], ...body }),
      signal,
    });
  }

  /** A streaming request that has produced its first token (so it holds its slot and its worker). */
  async function openStream(base: string, key: string, model: string) {
    const controller = new AbortController();
    const res = await chat(
      base,
      key,
      { model, stream: true, messages: [{ role: 'user', content: LONG_TEXT }] },
      controller.signal,
    );
    expect(res.status).toBe(200);
    const events = readSse(res.body!);
    await events.next();
    const abort = async () => {
      controller.abort();
      await events.return(undefined).catch(() => undefined);
    };
    return { res, events, abort };
  }

  async function usageOf(keyId: string, base = a) {
    const res = await fetch(`${base}/admin/usage?key=${keyId}`, admin());
    expect(res.status).toBe(200);
    return (await res.json()) as {
      data: {
        model: string;
        requests: number;
        prompt_tokens: number;
        completion_tokens: number;
        images: number;
      }[];
      totals: { requests: number; prompt_tokens: number; completion_tokens: number; images: number };
    };
  }

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: CATALOG,
      // A client that leaves stops its job at once (RESUME_GRACE_MS=0): these tests count that moment.
      env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN, KEY_CACHE_MS: '60000', RESUME_GRACE_MS: '0' },
      appEnv: { 'chat-worker': { WORKER_MODELS: 'sim-chat,sim-chat-words,slow-chat' } },
      waitForModels: ['sim-chat', 'sim-image', 'slow-chat'],
    });
    a = stack.baseUrl;
    const portB = await freePort();
    b = `http://127.0.0.1:${portB}`;
    // Replica B keeps short leases, so the crash test below sees its slots expire quickly.
    stack.spawnExtra('gateway:b', { PORT: String(portB), CONCURRENCY_SLOT_TTL_MS: '3000' });
    stack.spawnExtra('chat-worker:queue', { WORKER_MODELS: 'queue-chat', WORKER_CONCURRENCY: '1' });
    await stack.waitUntilServing(['queue-chat']);
    await until('gateway B', async () => {
      const res = await fetch(`${b}/v1/models`, { headers: stack.headers() }).catch(() => null);
      return res?.ok ? true : undefined;
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  describe('the admin API', () => {
    it('refuses without the admin token, with a wrong one, and with an API key', async () => {
      const none = await fetch(`${a}/admin/keys`);
      expect(none.status).toBe(401);
      const wrong = await fetch(`${a}/admin/keys`, admin({}, `${ADMIN_TOKEN}x`));
      expect(wrong.status).toBe(401);
      expect(((await wrong.json()) as { error: { code: string } }).error.code).toBe('invalid_admin_token');
      const apiKey = await fetch(`${b}/admin/keys`, admin({}, stack.apiKey));
      expect(apiKey.status).toBe(401);
      const usage = await fetch(`${b}/admin/usage`, { method: 'GET' });
      expect(usage.status).toBe(401);
      const create = await fetch(`${a}/admin/keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'nope' }),
      });
      expect(create.status).toBe(401);
    });

    it('issues a key whose secret is shown once and never again', async () => {
      const created = await createKey({ name: 'ci', models: ['sim-chat'], rpm: 60, priority: 'high' });
      expect(created.key).toMatch(/^sk-gw-[A-Za-z0-9_-]{43}$/);
      expect(created).toMatchObject({
        object: 'api_key',
        name: 'ci',
        prefix: created.key.slice(0, 10),
        models: ['sim-chat'],
        rpm: 60,
        tpm: null,
        max_concurrent: null,
        priority: 'high',
        disabled: false,
      });
      expect(created.id).toMatch(/^key_[0-9a-f]{24}$/);

      for (const base of [a, b]) {
        const list = await (await fetch(`${base}/admin/keys`, admin())).text();
        expect(list).toContain(created.id);
        expect(list).not.toContain(created.key);
        expect(list).not.toContain(created.key.slice(10));
        const show = await (await fetch(`${base}/admin/keys/${created.id}`, admin())).text();
        expect(JSON.parse(show)).toMatchObject({ id: created.id, name: 'ci' });
        expect(show).not.toContain(created.key.slice(10));
        expect(JSON.parse(show)).not.toHaveProperty('key');
        expect(JSON.parse(show)).not.toHaveProperty('hash');
      }
      const missing = await fetch(`${a}/admin/keys/key_${'0'.repeat(24)}`, admin());
      expect(missing.status).toBe(404);
    });

    it('validates what it is given', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{}, 'name'],
        [{ name: 'x', rpm: 0 }, 'rpm'],
        [{ name: 'x', rpm: 'ten' }, 'rpm'],
        [{ name: 'x', models: [] }, 'models'],
        [{ name: 'x', priority: 'urgent' }, 'priority'],
        [{ name: 'x', expires_at: 1000 }, 'expires_at'],
        [{ name: 'x', secret: 'mine' }, 'secret'],
      ];
      for (const [body, param] of cases) {
        const res = await fetch(`${a}/admin/keys`, admin({ method: 'POST', body: JSON.stringify(body) }));
        expect(res.status).toBe(400);
        expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param);
      }
    });
  });

  it('scopes a key to its models: others are "not found", and /v1/models lists only its own', async () => {
    const { key } = await createKey({ name: 'scoped', models: ['sim-chat', 'sim-image'] });
    const models = (await (
      await fetch(`${b}/v1/models`, { headers: { authorization: `Bearer ${key}` } })
    ).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id).sort()).toEqual(['sim-chat', 'sim-image']);

    const ok = await chat(a, key, { model: 'sim-chat' });
    expect(ok.status).toBe(200);
    const hidden = await chat(b, key, { model: 'sim-chat-words' });
    expect(hidden.status).toBe(404);
    expect(((await hidden.json()) as { error: { code: string } }).error.code).toBe('model_not_found');
    const retrieve = await fetch(`${a}/v1/models/slow-chat`, { headers: { authorization: `Bearer ${key}` } });
    expect(retrieve.status).toBe(404);
    // The bootstrap key keeps working, with every model.
    expect((await chat(b, stack.apiKey, { model: 'sim-chat-words' })).status).toBe(200);
  });

  it('lets exactly 10 requests of a 10 rpm key through across both replicas', async () => {
    const { key } = await createKey({ name: 'rpm', rpm: 10 });
    const responses = await Promise.all(
      Array.from({ length: 16 }, (_, i) => chat(i % 2 === 0 ? a : b, key, { model: 'sim-chat' })),
    );
    const ok = responses.filter((r) => r.status === 200);
    const limited = responses.filter((r) => r.status === 429);
    expect(ok).toHaveLength(10);
    expect(limited).toHaveLength(6);
    for (const res of ok) expect(res.headers.get('x-ratelimit-limit-requests')).toBe('10');
    const remaining = ok.map((r) => Number(r.headers.get('x-ratelimit-remaining-requests'))).sort();
    expect(remaining).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (const res of limited) {
      const body = (await res.json()) as { error: { type: string; code: string } };
      expect(body.error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded' });
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(60);
      expect(res.headers.get('x-ratelimit-limit-requests')).toBe('10');
      expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('0');
      expect(res.headers.get('x-ratelimit-reset-requests')).toMatch(/^(\d+m)?[\d.]+m?s$/);
    }
    await Promise.all(ok.map((r) => r.text()));
  });

  it('sees a revocation made on one replica on the other within seconds, not after the cache', async () => {
    const created = await createKey({ name: 'revoked' });
    const probe = () => fetch(`${b}/v1/models`, { headers: { authorization: `Bearer ${created.key}` } });
    expect((await probe()).status).toBe(200); // now cached on B (KEY_CACHE_MS is a minute)
    const revoked = await fetch(`${a}/admin/keys/${created.id}`, admin({ method: 'DELETE' }));
    expect(revoked.status).toBe(200);
    const at = Date.now();
    expect(await revoked.json()).toMatchObject({ id: created.id, deleted: true });
    const refused = await until('B to refuse the revoked key', async () => {
      const res = await probe();
      return res.status === 401 ? res : undefined;
    });
    expect(Date.now() - at).toBeLessThan(PROPAGATION_MS);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
    expect((await chat(a, created.key, { model: 'sim-chat' })).status).toBe(401);
  });

  it('applies an update (disable, then re-enable with other limits) on the other replica within seconds', async () => {
    const created = await createKey({ name: 'updated' });
    expect((await chat(b, created.key, { model: 'sim-chat' })).status).toBe(200);
    const disabled = await fetch(
      `${a}/admin/keys/${created.id}`,
      admin({ method: 'PATCH', body: JSON.stringify({ disabled: true }) }),
    );
    expect(disabled.status).toBe(200);
    let at = Date.now();
    await until('B to refuse the disabled key', async () =>
      (await chat(b, created.key, { model: 'sim-chat' })).status === 401 ? true : undefined,
    );
    expect(Date.now() - at).toBeLessThan(PROPAGATION_MS);
    const enabled = await fetch(
      `${a}/admin/keys/${created.id}`,
      admin({ method: 'PATCH', body: JSON.stringify({ disabled: false, models: ['sim-image'] }) }),
    );
    expect(await enabled.json()).toMatchObject({ disabled: false, models: ['sim-image'] });
    at = Date.now();
    await until('B to apply the new scope', async () =>
      (await chat(b, created.key, { model: 'sim-chat' })).status === 404 ? true : undefined,
    );
    expect(Date.now() - at).toBeLessThan(PROPAGATION_MS);
  });

  it('gives a concurrency slot back when the client aborts', async () => {
    const { key } = await createKey({ name: 'one-at-a-time', max_concurrent: 1 });
    const first = await openStream(a, key, 'slow-chat');
    const second = await chat(b, key, { model: 'sim-chat' });
    expect(second.status).toBe(429);
    expect(((await second.json()) as { error: { type: string; code: string } }).error).toMatchObject({
      type: 'requests',
      code: 'rate_limit_exceeded',
    });
    await first.abort();
    // Gateway A's lease is 30 s: a slot back within seconds was released, not expired.
    const started = Date.now();
    await until('the slot to come back', async () =>
      (await chat(b, key, { model: 'sim-chat' })).status === 200 ? true : undefined,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('counts a streamed request whose client left, with what was generated', async () => {
    const { id, key } = await createKey({ name: 'leaver' });
    const stream = await openStream(a, key, 'slow-chat');
    await stream.events.next();
    await stream.abort();
    const usage = await until('the cancelled job to be recorded', async () => {
      const report = await usageOf(id);
      return report.totals.requests === 1 ? report : undefined;
    });
    expect(usage.totals.completion_tokens).toBeGreaterThanOrEqual(2);
    // Far fewer than the whole echo: generation stopped when the client left.
    expect(usage.totals.completion_tokens).toBeLessThan(120);
    expect(usage.totals.prompt_tokens).toBeGreaterThan(0);
  });

  it('reserves tokens at admission and reconciles them with the actual usage', async () => {
    const { key } = await createKey({ name: 'tpm', tpm: 1000 });
    const content = 'count these tokens please'; // 25 characters: 4 + ceil(25 / 4) = 11 estimated
    const first = await chat(a, key, {
      model: 'sim-chat',
      max_tokens: 100,
      messages: [{ role: 'user', content }],
    });
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit-tokens')).toBe('1000');
    expect(first.headers.get('x-ratelimit-remaining-tokens')).toBe(String(1000 - 111));
    const firstUsage = ((await first.json()) as { usage: Usage }).usage;
    const actual = firstUsage.prompt_tokens + firstUsage.completion_tokens;
    expect(actual).toBeLessThan(111);

    // The worker replaced the 111 reserved by the actual usage before the answer went out.
    const second = await chat(b, key, {
      model: 'sim-chat',
      max_tokens: 100,
      messages: [{ role: 'user', content }],
    });
    expect(second.status).toBe(200);
    expect(second.headers.get('x-ratelimit-remaining-tokens')).toBe(String(1000 - actual - 111));
    const secondUsage = ((await second.json()) as { usage: Usage }).usage;
    const used = actual + secondUsage.prompt_tokens + secondUsage.completion_tokens;

    const tooMuch = await chat(a, key, {
      model: 'sim-chat',
      max_tokens: 1000 - used,
      messages: [{ role: 'user', content }],
    });
    expect(tooMuch.status).toBe(429);
    expect(((await tooMuch.json()) as { error: { type: string } }).error.type).toBe('tokens');
    expect(Number(tooMuch.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(tooMuch.headers.get('x-ratelimit-remaining-tokens')).toBe(String(1000 - used));

    const never = await chat(b, key, { model: 'sim-chat', max_tokens: 5000 });
    expect(never.status).toBe(400);
    expect(((await never.json()) as { error: { code: string } }).error.code).toBe('request_too_large');
  });

  it('records usage that equals the sum of the responses, across replicas and under concurrency', async () => {
    const { id, key } = await createKey({ name: 'metered' });
    const requests = Array.from({ length: 12 }, (_, i) =>
      chat(i % 2 === 0 ? a : b, key, {
        model: i % 3 === 0 ? 'sim-chat-words' : 'sim-chat',
        max_tokens: 5 + i,
        messages: [{ role: 'user', content: `message number ${i} ${'x'.repeat(i * 7)}` }],
      }).then(async (res) => {
        expect(res.status).toBe(200);
        return (await res.json()) as { model: string; usage: Usage };
      }),
    );
    const streamed = (async () => {
      const res = await chat(b, key, { model: 'sim-chat', stream: true });
      let usage: Usage | null = null;
      for await (const event of readSse(res.body!)) {
        if (event.data === '[DONE]') break;
        usage = (JSON.parse(event.data) as { usage?: Usage }).usage ?? usage;
      }
      return { model: 'sim-chat', usage: usage! };
    })();
    const image = fetch(`${a}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-image', prompt: 'a cat', size: '256x256', n: 2 }),
    }).then((res) => {
      expect(res.status).toBe(200);
      return res.json();
    });
    const answers = [...(await Promise.all(requests)), await streamed];
    await image;
    const report = await usageOf(id, b);
    const sum = (model?: string) =>
      answers
        .filter((x) => model === undefined || x.model === model)
        .reduce(
          (acc, x) => ({
            prompt_tokens: acc.prompt_tokens + x.usage.prompt_tokens,
            completion_tokens: acc.completion_tokens + x.usage.completion_tokens,
          }),
          { prompt_tokens: 0, completion_tokens: 0 },
        );
    // Live requests only: none of it is batch usage. No model here has prices: each costs 0.
    const noBatch = { requests: 0, prompt_tokens: 0, completion_tokens: 0, images: 0, cost: 0 };
    expect(report.totals).toEqual({ requests: 14, ...sum(), images: 2, cost: 0, batch: noBatch });
    const byModel = new Map(report.data.map((row) => [row.model, row]));
    expect(byModel.get('sim-chat')).toMatchObject({ requests: 9, ...sum('sim-chat') });
    expect(byModel.get('sim-chat-words')).toMatchObject({ requests: 4, ...sum('sim-chat-words') });
    expect(byModel.get('sim-image')).toMatchObject({ requests: 1, images: 2, prompt_tokens: 0 });

    const all = (await (await fetch(`${a}/admin/usage`, admin())).json()) as { data: { key_id: string }[] };
    expect(all.data.some((row) => row.key_id === id)).toBe(true);
    const bad = await fetch(`${a}/admin/usage?from=2024-02-31`, admin());
    expect(bad.status).toBe(400);
  });

  it('answers 503 overloaded with Retry-After when a model queue is full, and queues by key priority', async () => {
    const { key: high } = await createKey({ name: 'vip', priority: 'high' });
    const running = await openStream(a, stack.apiKey, 'queue-chat');
    // The worker runs one job at a time: this one waits in the queue (depth 1 = the model's bound).
    const waiting = await chat(b, high, { model: 'queue-chat', stream: true }, undefined);
    expect(waiting.status).toBe(200);
    const requestId = waiting.headers.get('x-request-id')!;
    const job = await stack.redis.hget(`${stack.namespace}:chat.queue-chat:${requestId}`, 'priority');
    // The key's tier: direct (the model has room for it in its queue) or parked, high's band.
    expect([SCHEDULING_BANDS.high.direct, SCHEDULING_BANDS.high.parked].map(String)).toContain(job);

    // The key that holds the whole room is refused (another key, with nothing waiting, would be let in:
    // README "Scheduling").
    const refused = await chat(a, high, { model: 'queue-chat' });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string; type: string } }).error).toMatchObject({
      code: 'overloaded',
      type: 'server_error',
    });
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    await running.abort();
    await waiting.body!.cancel();
    await until('the queue to accept again', async () => {
      const res = await chat(b, stack.apiKey, {
        model: 'queue-chat',
        messages: [{ role: 'user', content: 'hi' }],
      });
      await res.text();
      return res.status === 200 ? true : undefined;
    });
  });

  it('works from the CLI: create, list, show, update, usage, revoke', async () => {
    const cli = async (...args: string[]) => {
      const { stdout } = await run(
        process.execPath,
        [join(ROOT, 'dist/apps/keys-cli/src/main.js'), ...args],
        {
          env: { PATH: process.env.PATH ?? '', REDIS_URL: stack.redisUrl, KEY_PREFIX: stack.namespace },
        },
      );
      return JSON.parse(stdout) as Record<string, unknown>;
    };
    const created = (await cli(
      'create',
      '--name',
      'ci',
      '--models',
      'sim-chat,sim-image',
      '--rpm',
      '60',
    )) as unknown as KeyView & {
      key: string;
    };
    issued.push(created.key);
    expect(created).toMatchObject({ name: 'ci', models: ['sim-chat', 'sim-image'], rpm: 60 });
    let answered = 0;
    const use = async (base: string) => {
      const res = await chat(base, created.key, { model: 'sim-chat' });
      if (res.status === 200) answered++;
      return res;
    };
    const answer = await use(b);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-ratelimit-limit-requests')).toBe('60');

    const list = JSON.stringify(await cli('list'));
    expect(list).toContain(created.id);
    expect(list).not.toContain(created.key.slice(10));
    expect(await cli('show', created.id)).toMatchObject({ id: created.id, rpm: 60 });

    expect(await cli('update', created.id, '--rpm', 'none', '--disable')).toMatchObject({
      rpm: null,
      disabled: true,
    });
    await until('the disabled key to be refused', async () =>
      (await use(a)).status === 401 ? true : undefined,
    );
    await cli('update', created.id, '--enable');
    const again = await until('the re-enabled key to work', async () => {
      const res = await use(a);
      return res.status === 200 ? res : undefined;
    });
    expect(again.headers.get('x-ratelimit-limit-requests')).toBeNull();

    const usage = (await cli('usage', '--key', created.id)) as { totals: { requests: number } };
    expect(usage.totals.requests).toBe(answered);

    expect(await cli('revoke', created.id)).toMatchObject({ id: created.id, deleted: true });
    await until('the revoked key to be refused', async () =>
      (await chat(b, created.key, { model: 'sim-chat' })).status === 401 ? true : undefined,
    );
    await expect(cli('update', created.id, '--rpm', '1')).rejects.toMatchObject({ code: 1 });
    await expect(cli('frobnicate')).rejects.toMatchObject({ code: 2 });
  });

  it('gives back the slots of a gateway killed with SIGKILL once their lease expires', async () => {
    const { key } = await createKey({ name: 'crash', max_concurrent: 1 });
    const held = await openStream(b, key, 'slow-chat');
    // Past B's 3 s lease the slot is still held: B keeps refreshing it while the request lives.
    await new Promise((r) => setTimeout(r, 4000));
    expect((await chat(a, key, { model: 'sim-chat' })).status).toBe(429);
    const killed = stack.processes.get('gateway:b')!;
    const exited = new Promise((r) => killed.once('exit', r));
    killed.kill('SIGKILL');
    await exited;
    await held.abort();
    const at = Date.now();
    await until('the lease of the dead gateway to expire', async () =>
      (await chat(a, key, { model: 'sim-chat' })).status === 200 ? true : undefined,
    );
    expect(Date.now() - at).toBeLessThan(10_000);
  });

  it('stores no raw key anywhere in Redis', async () => {
    expect(issued.length).toBeGreaterThan(5);
    const secrets = issued.map((key) => key.slice('sk-gw-'.length));
    let cursor = '0';
    let scanned = 0;
    do {
      const [next, names] = await stack.redis.scan(cursor, 'MATCH', `${stack.namespace}:*`, 'COUNT', 500);
      cursor = next;
      for (const name of names) {
        const type = await stack.redis.type(name);
        let values: string[] = [];
        if (type === 'string') values = [(await stack.redis.get(name)) ?? ''];
        else if (type === 'hash') values = Object.entries(await stack.redis.hgetall(name)).flat();
        else if (type === 'set') values = await stack.redis.smembers(name);
        else if (type === 'zset') values = await stack.redis.zrange(name, 0, '-1');
        else if (type === 'list') values = await stack.redis.lrange(name, 0, -1);
        const text = [name, ...values].join('\n');
        for (const secret of secrets) expect(text).not.toContain(secret);
        scanned++;
      }
    } while (cursor !== '0');
    expect(scanned).toBeGreaterThan(10);
  });
});
