import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { GatewayConfig } from '@mgw/config';
import { storedCompletionNamesFor, type ChatCompletion } from '@mgw/contracts';
import type { RedisConnections } from '@mgw/redis';
import { toStoreMessages } from './store-message.mapper';
import { StoredCompletionStore, type CompletionToStore } from './stored-completion.store';

/** The store's scripts and pages against a real Redis, in a namespace of its own. */
describe('StoredCompletionStore (real Redis)', () => {
  const namespace = `it-stored-${randomBytes(5).toString('hex')}`;
  const DAY_MS = 24 * 3_600_000;
  let redis: Redis;
  let seq = 0;

  const keyId = () => `key_${randomBytes(12).toString('hex')}`;

  function storeWith(settings: { retentionMs?: number; maxPerKey?: number } = {}): StoredCompletionStore {
    const config = {
      namespace,
      storeRetentionMs: settings.retentionMs ?? DAY_MS,
      storeMaxPerKey: settings.maxPerKey ?? 100,
    } as GatewayConfig;
    return new StoredCompletionStore({ commands: redis } as RedisConnections, config);
  }

  function completion(id: string, model: string, text: string): ChatCompletion {
    return {
      id,
      object: 'chat.completion',
      created: 1_700_000_000,
      model,
      system_fingerprint: 'fp_test',
      choices: [
        { index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: 'stop' },
      ],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    };
  }

  /** A completion created `createdMs` (default: now, one ms apart per call so the order is known). */
  function entry(overrides: Partial<CompletionToStore> & { text?: string } = {}): CompletionToStore {
    const id = overrides.id ?? `chatcmpl-${String(++seq).padStart(8, '0')}${randomBytes(4).toString('hex')}`;
    const model = overrides.model ?? 'sim-chat';
    return {
      id,
      model,
      createdMs: overrides.createdMs ?? Date.now() + seq,
      metadata: overrides.metadata ?? {},
      completion: overrides.completion ?? completion(id, model, overrides.text ?? `answer ${seq}`),
      messages:
        overrides.messages ??
        toStoreMessages(id, [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: `question ${seq}` },
        ]),
    };
  }

  beforeAll(() => {
    redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
  });

  afterAll(async () => {
    const keys = await redis.keys(`${namespace}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('keeps a completion with its metadata and messages, read back as stored, only for its own key', async () => {
    const store = storeWith();
    const owner = keyId();
    const saved = entry({ metadata: { team: 'search' } });
    expect(await store.save(owner, saved)).toBe(0);

    const record = await store.get(owner, saved.id);
    expect(record).toEqual({
      id: saved.id,
      keyId: owner,
      model: 'sim-chat',
      createdMs: saved.createdMs,
      metadata: { team: 'search' },
      completion: saved.completion,
    });
    expect(await store.get(keyId(), saved.id)).toBeNull();
    expect(await store.messages(keyId(), saved.id, { limit: 10, order: 'asc' })).toBeNull();
    expect(await store.page(keyId(), { limit: 10, order: 'asc' })).toEqual({ items: [], hasMore: false });
    expect(await store.delete(keyId(), saved.id)).toBe(false);
    expect(await store.get(owner, saved.id)).not.toBeNull();
  });

  it('expires a completion, its messages and its index entries at creation + STORE_RETENTION_MS', async () => {
    const retentionMs = 60_000;
    const store = storeWith({ retentionMs });
    const owner = keyId();
    const names = storedCompletionNamesFor(namespace, owner);
    const fresh = entry();
    await store.save(owner, fresh);
    const ttl = await redis.pttl(names.record(fresh.id));
    expect(ttl).toBeGreaterThan(retentionMs - 5_000);
    expect(ttl).toBeLessThanOrEqual(retentionMs + 1_000);
    expect(await redis.pttl(names.messages(fresh.id))).toBeGreaterThan(retentionMs - 5_000);
    expect(await redis.pttl(names.index)).toBeGreaterThan(retentionMs - 5_000);

    // Created long enough ago that it has 300 ms left.
    const old = entry({ createdMs: Date.now() - retentionMs + 300 });
    await store.save(owner, old);
    expect(await store.get(owner, old.id)).not.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(await store.get(owner, old.id)).toBeNull();
    expect(await redis.exists(names.messages(old.id))).toBe(0);
    // Its index entry is dropped by the next list.
    const listed = async () => (await store.page(owner, { limit: 10, order: 'asc' }))!.items.map((r) => r.id);
    expect(await redis.zscore(names.index, old.id)).not.toBeNull();
    expect(await listed()).toEqual([fresh.id]);
    expect(await redis.zscore(names.index, old.id)).toBeNull();
    // So is an entry whose record vanished before its time (a list meets it and drops it).
    const vanished = entry();
    await store.save(owner, vanished);
    await redis.del(names.record(vanished.id));
    expect(await listed()).toEqual([fresh.id]);
    expect(await redis.zscore(names.index, vanished.id)).toBeNull();

    // Already past its retention when it finished: not stored at all.
    const expired = entry({ createdMs: Date.now() - retentionMs - 1 });
    expect(await store.save(owner, expired)).toBe(-1);
    expect(await redis.exists(names.record(expired.id))).toBe(0);
  });

  it('bounds each key to STORE_MAX_PER_KEY by evicting its oldest completions, record and indexes', async () => {
    const store = storeWith({ maxPerKey: 3 });
    const owner = keyId();
    const other = keyId();
    const names = storedCompletionNamesFor(namespace, owner);
    const base = Date.now();
    const saved = [0, 1, 2, 3, 4].map((i) =>
      entry({ createdMs: base + i, model: i % 2 === 0 ? 'even' : 'odd' }),
    );
    const theirs = entry({ createdMs: base });
    await store.save(other, theirs);
    const evicted: number[] = [];
    for (const item of saved) evicted.push(await store.save(owner, item));
    expect(evicted).toEqual([0, 0, 0, 1, 1]);

    const page = await store.page(owner, { limit: 10, order: 'asc' });
    expect(page!.items.map((r) => r.id)).toEqual(saved.slice(2).map((s) => s.id));
    for (const gone of saved.slice(0, 2)) {
      expect(await redis.exists(names.record(gone.id), names.messages(gone.id))).toBe(0);
    }
    expect(await redis.zrange(names.modelIndex('even'), 0, '-1')).toEqual([saved[2]!.id, saved[4]!.id]);
    expect(await redis.zrange(names.modelIndex('odd'), 0, '-1')).toEqual([saved[3]!.id]);
    // Another key's completions are not counted against this key's bound.
    expect(await store.get(other, theirs.id)).not.toBeNull();
  });

  describe('pages', () => {
    const store = () => storeWith();
    const owner = keyId();
    const base = Date.now();
    const saved = Array.from({ length: 7 }, (_, i) =>
      entry({
        createdMs: base + i * 10,
        model: i < 4 ? 'alpha' : 'beta',
        metadata: { parity: i % 2 === 0 ? 'even' : 'odd', ...(i === 5 && { tag: 'x' }) },
      }),
    );
    const ids = saved.map((s) => s.id);

    beforeAll(async () => {
      // Saved out of creation order: the index orders by creation time, not by when a completion finished.
      for (const item of [...saved].reverse()) await store().save(owner, item);
    });

    async function all(query: {
      order: 'asc' | 'desc';
      limit: number;
      model?: string;
      metadata?: Record<string, string>;
    }) {
      const pages: Array<{ ids: string[]; hasMore: boolean }> = [];
      let after: string | undefined;
      for (;;) {
        const page = (await store().page(owner, { ...query, after }))!;
        pages.push({ ids: page.items.map((r) => r.id), hasMore: page.hasMore });
        if (!page.hasMore) return pages;
        after = page.items.at(-1)!.id;
      }
    }

    it('walks the key’s completions by creation time, in both orders, with has_more on every page but the last', async () => {
      expect(await all({ order: 'asc', limit: 3 })).toEqual([
        { ids: ids.slice(0, 3), hasMore: true },
        { ids: ids.slice(3, 6), hasMore: true },
        { ids: ids.slice(6), hasMore: false },
      ]);
      expect(await all({ order: 'desc', limit: 4 })).toEqual([
        { ids: [...ids].reverse().slice(0, 4), hasMore: true },
        { ids: [...ids].reverse().slice(4), hasMore: false },
      ]);
      expect(await all({ order: 'asc', limit: 7 })).toEqual([{ ids, hasMore: false }]);
    });

    it('filters by model and by metadata pairs (all must match), paging through the matches', async () => {
      expect(await all({ order: 'asc', limit: 2, model: 'beta' })).toEqual([
        { ids: ids.slice(4, 6), hasMore: true },
        { ids: ids.slice(6), hasMore: false },
      ]);
      expect(await all({ order: 'desc', limit: 2, metadata: { parity: 'even' } })).toEqual([
        { ids: [ids[6], ids[4]], hasMore: true },
        { ids: [ids[2], ids[0]], hasMore: false },
      ]);
      expect(
        await all({ order: 'asc', limit: 5, model: 'beta', metadata: { parity: 'odd', tag: 'x' } }),
      ).toEqual([{ ids: [ids[5]], hasMore: false }]);
      expect(await all({ order: 'asc', limit: 5, metadata: { parity: 'none' } })).toEqual([
        { ids: [], hasMore: false },
      ]);
      expect(await all({ order: 'asc', limit: 5, model: 'gamma' })).toEqual([{ ids: [], hasMore: false }]);
    });

    it('answers null for an `after` that is not one of the key’s completions', async () => {
      expect(await store().page(owner, { order: 'asc', limit: 2, after: 'chatcmpl-unknown00' })).toBeNull();
      expect(await store().page(keyId(), { order: 'asc', limit: 2, after: ids[0] })).toBeNull();
    });

    it('pages a completion’s request messages by position, in both orders', async () => {
      const id = ids[3]!;
      const asc = (await store().messages(owner, id, { limit: 1, order: 'asc' }))!;
      expect(asc.items).toEqual([
        { id: `${id}-0`, role: 'system', content: 'Be brief.', name: null, content_parts: null },
      ]);
      expect(asc.hasMore).toBe(true);
      const next = (await store().messages(owner, id, { afterIndex: 0, limit: 5, order: 'asc' }))!;
      expect(next.items.map((m) => m.id)).toEqual([`${id}-1`]);
      expect(next.hasMore).toBe(false);
      const desc = (await store().messages(owner, id, { limit: 5, order: 'desc' }))!;
      expect(desc.items.map((m) => m.id)).toEqual([`${id}-1`, `${id}-0`]);
      expect(desc.hasMore).toBe(false);
      const descNext = (await store().messages(owner, id, { afterIndex: 1, limit: 5, order: 'desc' }))!;
      expect(descNext.items.map((m) => m.id)).toEqual([`${id}-0`]);
      expect(await store().messages(owner, id, { afterIndex: 1, limit: 5, order: 'asc' })).toEqual({
        items: [],
        hasMore: false,
      });
    });
  });

  it('updates metadata in place (expiry kept) and deletes a completion from every index', async () => {
    const store = storeWith();
    const owner = keyId();
    const names = storedCompletionNamesFor(namespace, owner);
    const saved = entry({ model: 'm1', metadata: { a: '1' } });
    await store.save(owner, saved);
    const ttl = await redis.pttl(names.record(saved.id));

    const updated = await store.updateMetadata(owner, saved.id, { b: '2' });
    expect(updated!.metadata).toEqual({ b: '2' });
    expect((await store.get(owner, saved.id))!.metadata).toEqual({ b: '2' });
    expect(await redis.pttl(names.record(saved.id))).toBeLessThanOrEqual(ttl);
    expect(await redis.pttl(names.record(saved.id))).toBeGreaterThan(ttl - 5_000);
    expect(await store.updateMetadata(keyId(), saved.id, { c: '3' })).toBeNull();

    expect(await store.delete(owner, saved.id)).toBe(true);
    expect(await store.delete(owner, saved.id)).toBe(false);
    expect(await redis.exists(names.record(saved.id), names.messages(saved.id))).toBe(0);
    expect(await redis.zscore(names.index, saved.id)).toBeNull();
    expect(await redis.zscore(names.modelIndex('m1'), saved.id)).toBeNull();
    expect(await store.updateMetadata(owner, saved.id, { c: '3' })).toBeNull();
  });

  it('treats a record that does not read as absent: retrieve, lists and messages skip it', async () => {
    const store = storeWith();
    const owner = keyId();
    const names = storedCompletionNamesFor(namespace, owner);
    const good = entry();
    const bad = entry();
    await store.save(owner, good);
    await store.save(owner, bad);
    await redis.hset(
      names.record(bad.id),
      'completion',
      '{"id":"chatcmpl-other","object":"chat.completion"}',
    );
    await redis.rpush(names.messages(good.id), '{"id":"not-its-id","role":"user","content":"x"}');

    expect(await store.get(owner, bad.id)).toBeNull();
    expect((await store.page(owner, { limit: 10, order: 'asc' }))!.items.map((r) => r.id)).toEqual([good.id]);
    const messages = (await store.messages(owner, good.id, { limit: 10, order: 'asc' }))!;
    expect(messages.items.map((m) => m.id)).toEqual([`${good.id}-0`, `${good.id}-1`]);

    await redis.hset(names.record(good.id), 'key', keyId());
    expect(await store.get(owner, good.id)).toBeNull();
  });
});
