import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { GatewayConfig } from '@mgw/config';
import { storedResponseNamesFor } from '@mgw/contracts';
import type { RedisConnections } from '@mgw/redis';
import { responseObject, UNSTORED_ECHO } from '../response-output';
import type { ResponseStatus } from '../responses.types';
import { ResponseStore, type StoredResponse } from './response.store';
import { CHAIN_SCRIPT } from './response-store.scripts';

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

  it('answers the length of a history over the byte bound instead of its bytes', async () => {
    const first = turn(null, 'x'.repeat(500));
    const second = turn(first.id, 'two');
    for (const entry of [first, second]) await store.save(keyId, entry);
    const whole = await store.chain(keyId, second.id);
    expect('items' in whole && whole.items).toHaveLength(4);
    const length = Number(
      await redis.hget(storedResponseNamesFor(namespace, keyId).record(second.id), 'end'),
    );
    expect(await store.chain(keyId, second.id, length)).toEqual(whole);
    expect(await store.chain(keyId, second.id, length - 1)).toEqual({ tooLarge: length });
  });

  it('keeps a key within STORE_MAX_PER_KEY by evicting its oldest', async () => {
    const entries = [1, 2, 3, 4].map((n) => turn(null, `t${n}`));
    for (const entry of entries) await store.save(keyId, entry);
    expect(await store.get(keyId, entries[0]!.id)).toBeNull();
    expect((await store.get(keyId, entries[3]!.id))?.response.status).toBe('completed');
  });

  function texts(chain: Awaited<ReturnType<ResponseStore['chain']>>): unknown[] {
    if (!('items' in chain)) return [chain];
    return chain.items.map((item) =>
      item.type !== 'message'
        ? item.type
        : typeof item.content === 'string'
          ? item.content
          : item.content.map((part) => ('text' in part ? part.text : part.type)).join(''),
    );
  }

  it('records an outcome once: a cancelled response stays cancelled, and its output joins its history once', async () => {
    const queued = turn(null, 'bg', 'queued');
    await store.save(keyId, queued);
    const output = turn(null, 'bg').response.output;
    const cancelled = { ...queued.response, status: 'cancelled' as const, output };
    expect(await store.finish(keyId, cancelled)).toBe(true);
    const late = { ...queued.response, status: 'completed' as const, output };
    expect(await store.finish(keyId, late)).toBe(false);
    expect((await store.get(keyId, queued.id))?.response.status).toBe('cancelled');
    expect(texts(await store.chain(keyId, queued.id))).toEqual(['bg', 're: bg']);
    expect(await store.finish(keyId, { ...late, id: 'resp_gone12345' })).toBe(false);
  });

  function roomyStore(): ResponseStore {
    return new ResponseStore(
      { commands: redis } as RedisConnections,
      { namespace, storeRetentionMs: 3_600_000, storeMaxPerKey: 100 } as GatewayConfig,
    );
  }

  it('branches: a turn continuing an older turn sees only that history, and the first branch keeps its own', async () => {
    store = roomyStore();
    const first = turn(null, 'one');
    const second = turn(first.id, 'two');
    const retry = turn(first.id, 'two again');
    const third = turn(second.id, 'three');
    for (const entry of [first, second, retry, third]) await store.save(keyId, entry);
    expect(texts(await store.chain(keyId, third.id))).toEqual([
      'one',
      're: one',
      'two',
      're: two',
      'three',
      're: three',
    ]);
    expect(texts(await store.chain(keyId, retry.id))).toEqual([
      'one',
      're: one',
      'two again',
      're: two again',
    ]);
    expect(texts(await store.chain(keyId, first.id))).toEqual(['one', 're: one']);
  });

  it('adds a background output that arrives after another turn continued it as a branch of its own', async () => {
    const running = turn(null, 'bg', 'queued');
    await store.save(keyId, running);
    const early = turn(running.id, 'early');
    await store.save(keyId, early);
    const done = {
      ...running.response,
      status: 'completed' as const,
      output: turn(null, 'bg').response.output,
    };
    expect(await store.finish(keyId, done)).toBe(true);
    expect(texts(await store.chain(keyId, early.id))).toEqual(['bg', 'early', 're: early']);
    expect(texts(await store.chain(keyId, running.id))).toEqual(['bg', 're: bg']);
    const next = turn(running.id, 'next');
    await store.save(keyId, next);
    expect(texts(await store.chain(keyId, next.id))).toEqual(['bg', 're: bg', 'next', 're: next']);
  });

  it('treats a tampered log or record as absent', async () => {
    const first = turn(null, 'one');
    const second = turn(first.id, 'two');
    for (const entry of [first, second]) await store.save(keyId, entry);
    const names = storedResponseNamesFor(namespace, keyId);
    await redis.append(names.log(first.id), ',{"type":"message","role":"narrator","content":"x"}');
    await redis.hset(names.record(second.id), 'end', String(await redis.strlen(names.log(first.id))));
    expect(await store.chain(keyId, second.id)).toEqual({ missing: second.id });
    await redis.hset(names.record(second.id), 'end', '3');
    expect(await store.chain(keyId, second.id)).toEqual({ missing: second.id });
    await redis.hset(names.record(first.id), 'input', '[{"type":"function_call","call_id":1}]');
    expect(await store.get(keyId, first.id)).toBeNull();
  });

  it('keeps a linear conversation in one log, and deletes a turn with the log it began', async () => {
    store = roomyStore();
    const names = storedResponseNamesFor(namespace, keyId);
    let previous: string | null = null;
    const chain: StoredResponse[] = [];
    for (let t = 0; t < 20; t++) {
      const entry = turn(previous, `t${t}`);
      await store.save(keyId, entry);
      chain.push(entry);
      previous = entry.id;
    }
    // A linear conversation keeps its items once: one log, the length of the last turn's history.
    const logs = await redis.keys(`${names.log('')}*`);
    expect(logs).toEqual([names.log(chain[0]!.id)]);
    expect(await redis.strlen(logs[0]!)).toBe(Number(await redis.hget(names.record(previous!), 'end')));
    expect(await redis.pttl(logs[0]!)).toBeGreaterThan(0);
    await store.delete(keyId, chain[0]!.id);
    expect(await redis.exists(logs[0]!)).toBe(0);
    expect(await store.chain(keyId, previous!)).toEqual({ missing: chain[0]!.id });
  });

  it('reads a conversation it read before by the bytes it lacks, with the same items as a cold read, and still sees a turn gone', async () => {
    store = roomyStore();
    const cold = () => roomyStore();
    const answers: unknown[][] = [];
    const run = CHAIN_SCRIPT.run.bind(CHAIN_SCRIPT);
    const spy = jest.spyOn(CHAIN_SCRIPT, 'run').mockImplementation(async (...args) => {
      const answer = (await run(...args)) as unknown[];
      answers.push(answer);
      return answer;
    });
    let previous: string | null = null;
    const turns: StoredResponse[] = [];
    for (let t = 0; t < 12; t++) {
      const entry = turn(previous, `t${t}`);
      await store.save(keyId, entry);
      turns.push(entry);
      previous = entry.id;
      // Every turn is read here, as a gateway reads the previous turn before the next.
      expect(await store.chain(keyId, entry.id)).toEqual(await cold().chain(keyId, entry.id));
    }
    // After the first, each read here got only the turn it lacked; the cold ones got everything.
    const deltas = answers.filter((answer) => answer[0] === 2);
    expect(deltas.length).toBe(11);
    for (const delta of deltas) expect((delta[3] as string).length).toBeLessThan(400);
    expect((answers.at(-1)![3] as string).length).toBeGreaterThan(2000);
    spy.mockRestore();
    // A branch from an older turn, and that older turn again: same as cold.
    const branch = turn(turns[4]!.id, 'branch');
    await store.save(keyId, branch);
    expect(texts(await store.chain(keyId, branch.id))).toEqual(texts(await cold().chain(keyId, branch.id)));
    expect(texts(await store.chain(keyId, turns[4]!.id))).toEqual(
      texts(await cold().chain(keyId, turns[4]!.id)),
    );
    // A background turn whose output arrives after it was read: the output is what the next read adds.
    const running = turn(previous, 'bg', 'queued');
    await store.save(keyId, running);
    expect(texts(await store.chain(keyId, running.id)).slice(-1)).toEqual(['bg']);
    const done = {
      ...running.response,
      status: 'completed' as const,
      output: turn(null, 'bg').response.output,
    };
    expect(await store.finish(keyId, done)).toBe(true);
    expect(texts(await store.chain(keyId, running.id)).slice(-2)).toEqual(['bg', 're: bg']);
    expect(await store.chain(keyId, running.id)).toEqual(await cold().chain(keyId, running.id));
    // A turn deleted meanwhile ends the conversation, cached or not.
    await store.delete(keyId, turns[7]!.id);
    expect(await store.chain(keyId, running.id)).toEqual({ missing: turns[7]!.id });
  });
});
