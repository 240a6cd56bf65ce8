import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { GatewayConfig } from '@mgw/config';
import type { RedisConnections } from '@mgw/session';
import { responseObject, UNSTORED_ECHO } from '../response-output';
import type { ResponseStatus } from '../responses.types';
import { ResponseStore, type StoredResponse } from './response.store';

/** The stored responses' scripts against a real Redis, in a namespace of its own. */
describe('ResponseStore (real Redis)', () => {
  const namespace = `it-responses-${randomBytes(5).toString('hex')}`;
  let redis: Redis;
  let store: ResponseStore;
  let keyId: string;
  let seq = 0;

  function turn(
    previousId: string | null,
    text: string,
    status: ResponseStatus = 'completed',
  ): StoredResponse {
    const requestId = `req${++seq}${randomBytes(6).toString('hex')}`;
    const base = { requestId, model: 'm', createdMs: Date.now() + seq, echo: UNSTORED_ECHO };
    const output =
      status === 'completed'
        ? [
            {
              type: 'message' as const,
              id: `msg_${requestId}_0`,
              status: 'completed' as const,
              role: 'assistant' as const,
              content: [{ type: 'output_text' as const, text: `re: ${text}`, annotations: [], logprobs: [] }],
            },
          ]
        : [];
    const response = responseObject(base, status, output);
    return {
      id: response.id,
      createdMs: base.createdMs,
      model: 'm',
      previousId,
      input: [{ type: 'message', id: `msg_${requestId}_i0`, role: 'user', content: text }],
      response,
    };
  }

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
  });

  beforeEach(() => {
    keyId = `key_${randomBytes(12).toString('hex')}`;
    store = new ResponseStore(
      { commands: redis } as RedisConnections,
      {
        namespace,
        storeRetentionMs: 3_600_000,
        storeMaxPerKey: 3,
      } as GatewayConfig,
    );
  });

  afterAll(async () => {
    const keys = await redis.keys(`${namespace}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('rebuilds a conversation from its turns in one script, oldest first, and names a turn that is gone', async () => {
    const first = turn(null, 'one');
    const second = turn(first.id, 'two');
    const third = turn(second.id, 'three');
    for (const entry of [first, second, third]) await store.save(keyId, entry);
    const chain = await store.chain(keyId, third.id);
    expect('items' in chain && chain.items.map((item) => item.type === 'message' && item.content)).toEqual([
      'one',
      [{ type: 'output_text', text: 're: one' }],
      'two',
      [{ type: 'output_text', text: 're: two' }],
      'three',
      [{ type: 'output_text', text: 're: three' }],
    ]);
    expect(await store.chain(`key_${randomBytes(12).toString('hex')}`, third.id)).toEqual({
      missing: third.id,
    });
    await store.delete(keyId, second.id);
    expect(await store.chain(keyId, third.id)).toEqual({ missing: second.id });
  });

  it('keeps a key within STORE_MAX_PER_KEY by evicting its oldest', async () => {
    const entries = [1, 2, 3, 4].map((n) => turn(null, `t${n}`));
    for (const entry of entries) await store.save(keyId, entry);
    expect(await store.get(keyId, entries[0]!.id)).toBeNull();
    expect((await store.get(keyId, entries[3]!.id))?.response.status).toBe('completed');
  });

  it('records an outcome once: a cancelled response stays cancelled, and its items follow the outcome', async () => {
    const queued = turn(null, 'bg', 'queued');
    await store.save(keyId, queued);
    const cancelled = { ...queued.response, status: 'cancelled' as const };
    expect(await store.finish(keyId, cancelled, queued.input)).toBe(true);
    const late = { ...queued.response, status: 'completed' as const };
    expect(await store.finish(keyId, late, queued.input)).toBe(false);
    expect((await store.get(keyId, queued.id))?.response.status).toBe('cancelled');
    expect(await store.finish(keyId, { ...late, id: 'resp_gone12345' }, [])).toBe(false);
  });
});
