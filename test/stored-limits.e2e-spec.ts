import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { freePort } from './support/free-port';
import { isAlive, Launcher } from './support/launcher';
import { rssBytes } from './support/process-stats';
import { waitFor } from './support/wait-for';

const API_KEY = `sk-stored-limits-${randomBytes(8).toString('hex')}`;
const ADMIN_TOKEN = `admin-${randomBytes(16).toString('hex')}`;
/** Characters of text a request may carry, whole or expanded: small, so a chain passes it in a few turns. */
const MAX_TEXT_CHARS = 20_000;
const MB = 1024 * 1024;

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/**
 * Stored state cannot amplify a request past the limits of one sent whole, and reads of stored state come
 * after the key's limits: through `npm start`'s processes, with its private Redis (nothing else's commands
 * or memory in the numbers).
 */
describe('stored limits (npm start)', () => {
  let launcher: Launcher;
  let baseUrl = '';
  let redis: Redis;

  const headers = (key = API_KEY) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
  const post = (path: string, body: unknown, key = API_KEY) =>
    fetch(`${baseUrl}${path}`, { method: 'POST', headers: headers(key), body: JSON.stringify(body) });
  const get = (path: string, key = API_KEY, method = 'GET') =>
    fetch(`${baseUrl}${path}`, { method, headers: { authorization: `Bearer ${key}` } });
  const admin = (path: string, method: string, body: unknown) =>
    fetch(`${baseUrl}/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  async function createKey(spec: Record<string, unknown>): Promise<{ id: string; key: string }> {
    const res = await admin('/keys', 'POST', {
      name: `stored-limits-${randomBytes(3).toString('hex')}`,
      ...spec,
    });
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string; key: string };
  }

  async function respond(body: Record<string, unknown>, key = API_KEY): Promise<{ id: string }> {
    const res = await post('/v1/responses', { model: 'sim-chat', ...body }, key);
    expect(res.status).toBe(200);
    return (await res.json()) as { id: string };
  }

  /** The Redis name of a stored response's record (its key's hash tag inside). */
  async function recordName(responseId: string): Promise<string> {
    const [, names] = await redis.scan('0', 'MATCH', `*:responses:*:r:${responseId}`, 'COUNT', 100_000);
    expect(names).toHaveLength(1);
    return names[0]!;
  }

  /** Seconds since anything read or wrote `name` (Redis's LRU clock; OBJECT itself does not touch it). */
  async function idleSeconds(name: string): Promise<number> {
    return Number(await redis.object('IDLETIME', name));
  }

  async function usedMemory(): Promise<number> {
    return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1]);
  }

  beforeAll(async () => {
    const [port, redisPort] = await Promise.all([freePort(), freePort()]);
    baseUrl = `http://127.0.0.1:${port}`;
    launcher = Launcher.start({
      PORT: String(port),
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      GATEWAY_API_KEYS: API_KEY,
      GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
      KEY_PREFIX: 'storedlimits',
      CHAT_MAX_TEXT_CHARS: String(MAX_TEXT_CHARS),
    });
    await waitFor(
      'sim-chat to be listed',
      async () => {
        if (!launcher.running) throw new Error('npm start exited early');
        const res = await get('/v1/models');
        return (
          res.ok && ((await res.json()) as { data: { id: string }[] }).data.some((m) => m.id === 'sim-chat')
        );
      },
      60_000,
      () => `\n--- output ---\n${launcher.output}`,
    );
    redis = new Redis(`redis://127.0.0.1:${redisPort}`, { maxRetriesPerRequest: 1 });
  });

  afterAll(async () => {
    await redis?.quit();
    if (launcher === undefined) return;
    await launcher.stop();
  });

  it('refuses 20 concurrent inputs of 40 item_references to a 4 MB image: 400, bounded time and memory', async () => {
    const image = `data:image/png;base64,${randomBytes(3 * MB).toString('base64')}`;
    const stored = await respond({
      input: [
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'what is in this picture?' },
            { type: 'input_image', image_url: image },
          ],
        },
      ],
    });
    const items = (await (await get(`/v1/responses/${stored.id}/input_items`)).json()) as {
      data: { id: string }[];
    };
    const itemId = items.data[0]!.id;
    const gateway = launcher.pidOf('gateway');
    const rssBefore = await rssBytes(gateway);
    const redisBefore = await usedMemory();

    const started = Date.now();
    const input = Array.from({ length: 40 }, () => ({ type: 'item_reference', id: itemId }));
    const answers = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const res = await post('/v1/responses', { model: 'sim-chat', input });
        return { status: res.status, body: (await res.json()) as ErrorBody };
      }),
    );
    const elapsedMs = Date.now() - started;
    const rssAfter = await rssBytes(gateway);
    const redisAfter = await usedMemory();
    console.log(
      `20 × 40 item_references to a 4 MB image: ${elapsedMs} ms; gateway RSS ${(rssBefore / MB).toFixed(1)} → ${(rssAfter / MB).toFixed(1)} MB; Redis used_memory ${(redisBefore / MB).toFixed(1)} → ${(redisAfter / MB).toFixed(1)} MB`,
    );

    for (const { status, body } of answers) {
      expect(status).toBe(400);
      expect(body.error).toMatchObject({
        type: 'invalid_request_error',
        param: 'input',
        code: 'request_too_large',
      });
      expect(body.error.message).toContain(`over the limit of ${10 * MB} bytes of image URLs`);
    }
    // Generous backstops: refusing reads the stored item once and stops at the third reference.
    expect(elapsedMs).toBeLessThan(30_000);
    expect(rssAfter - rssBefore).toBeLessThan(50 * MB);
    expect(redisAfter - redisBefore).toBeLessThan(50 * MB);
    // The same gateway process still serves.
    expect(launcher.pidOf('gateway')).toBe(gateway);
    expect(isAlive(gateway)).toBe(true);
    expect((await post('/v1/responses', { model: 'sim-chat', input: 'still here?' })).status).toBe(200);
  });

  it('refuses a previous_response_id chain that expands past a limit with a 400 naming previous_response_id', async () => {
    // Each turn sends 1,500 characters and the echo answers them: the conversation grows by 3,000 a turn.
    const turn = 'x'.repeat(1_500);
    let previous: string | null = null;
    let turns = 0;
    let refusal: ErrorBody | null = null;
    while (refusal === null) {
      expect(turns).toBeLessThan(20);
      const res = await post('/v1/responses', {
        model: 'sim-chat',
        input: turn,
        ...(previous !== null && { previous_response_id: previous }),
      });
      if (res.status === 400) refusal = (await res.json()) as ErrorBody;
      else {
        expect(res.status).toBe(200);
        previous = ((await res.json()) as { id: string }).id;
        turns += 1;
      }
    }
    // Turn n carries 3,000 × (n - 1) characters of history and its own 1,500: 7 turns pass (19,500), and
    // the 8th's history alone (21,000) is past 20,000.
    expect(turns).toBe(7);
    expect(refusal.error).toMatchObject({
      type: 'invalid_request_error',
      param: 'previous_response_id',
      code: 'request_too_large',
    });
    expect(refusal.error.message).toContain(`over the limit of ${MAX_TEXT_CHARS} characters of text`);
  });

  it('answers 429 to a key at its rpm on previous_response_id and item_reference without reading them', async () => {
    const { key } = await createKey({ rpm: 3 });
    const first = await respond({ input: 'remember this' }, key);
    const record = await recordName(first.id);
    const items = (await (await get(`/v1/responses/${first.id}/input_items`, key)).json()) as {
      data: { id: string }[];
    };
    await waitFor('the record to be idle', async () => (await idleSeconds(record)) >= 2, 10_000);
    // The probe sees a read: a continuation the key may still send reads the record.
    await respond({ input: 'and this', previous_response_id: first.id }, key);
    expect(await idleSeconds(record)).toBeLessThanOrEqual(1);

    await waitFor('the record to be idle again', async () => (await idleSeconds(record)) >= 2, 10_000);
    const idle = await idleSeconds(record);
    const continued = await post(
      '/v1/responses',
      { model: 'sim-chat', input: 'more', previous_response_id: first.id },
      key,
    );
    const referred = await post(
      '/v1/responses',
      { model: 'sim-chat', input: [{ type: 'item_reference', id: items.data[0]!.id }] },
      key,
    );
    for (const res of [continued, referred]) {
      expect(res.status).toBe(429);
      expect(((await res.json()) as ErrorBody).error).toMatchObject({
        type: 'requests',
        code: 'rate_limit_exceeded',
      });
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(res.headers.get('x-ratelimit-limit-requests')).toBe('3');
      expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    }
    expect(await idleSeconds(record)).toBeGreaterThanOrEqual(idle);
  });

  it('counts stored reads against rpm: a key with rpm 3 gets 429 with its headers on the 4th', async () => {
    const created = await createKey({});
    const stored = await respond({ input: 'read me' }, created.key);
    // Limits and a scope without sim-chat at once: the scope's 404 (refused before admission, counting
    // nothing) shows when this gateway applies them.
    const patched = await admin(`/keys/${created.id}`, 'PATCH', { rpm: 3, models: ['sim-image'] });
    expect(patched.status).toBe(200);
    await waitFor('the new limits to apply', async () => {
      const probe = { model: 'sim-chat', messages: [{ role: 'user', content: 'scoped yet?' }] };
      return (await post('/v1/chat/completions', probe, created.key)).status === 404;
    });

    const reads = [
      () => get(`/v1/responses/${stored.id}`, created.key),
      () => get(`/v1/responses/${stored.id}/input_items`, created.key),
      () => get(`/v1/responses/${stored.id}`, created.key),
    ];
    for (const [index, read] of reads.entries()) {
      const res = await read();
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit-requests')).toBe('3');
      expect(res.headers.get('x-ratelimit-remaining-requests')).toBe(String(2 - index));
    }
    for (const refused of [
      await get(`/v1/responses/${stored.id}`, created.key),
      await get(`/v1/responses/${stored.id}?stream=true`, created.key),
      await get(`/v1/responses/${stored.id}`, created.key, 'DELETE'),
      await post(`/v1/responses/${stored.id}/cancel`, {}, created.key),
      await get('/v1/chat/completions', created.key),
      await get('/v1/chat/completions/chatcmpl-unknown/messages', created.key),
    ]) {
      expect(refused.status).toBe(429);
      const body = (await refused.json()) as ErrorBody;
      expect(body.error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded' });
      expect(body.error.message).toContain('Limit 3');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(refused.headers.get('x-ratelimit-remaining-requests')).toBe('0');
      expect(refused.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d/);
    }
    // Refused, the delete deleted nothing: the unlimited bootstrap key cannot see it, so ask Redis.
    expect(await redis.exists(await recordName(stored.id))).toBe(1);
  });
});
