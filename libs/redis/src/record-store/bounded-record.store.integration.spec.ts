import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import {
  BoundedRecordStore,
  RecordScripts,
  type FieldValues,
  type RecordBounds,
  type RecordLayout,
} from './bounded-record.store';

/** The generic store's scripts and pages against a real Redis, in a prefix of its own. */
describe('BoundedRecordStore (real Redis)', () => {
  const prefix = `it-records-${randomBytes(5).toString('hex')}`;
  const HOUR_MS = 3_600_000;
  let redis: Redis;
  let seq = 0;

  const owner = () => `owner_${randomBytes(6).toString('hex')}`;
  const base = (who: string) => `${prefix}:{${who}}`;
  /** Records `r:<id>`, each with a companion `r:<id>:parts`, and an index by `kind` (`kind:<value>`). */
  const layoutOf = (who: string): RecordLayout => ({
    index: `${base(who)}:index`,
    recordPrefix: `${base(who)}:r:`,
    companions: [[`${base(who)}:r:`, ':parts']],
    indexedBy: { field: 'kind', prefix: `${base(who)}:kind:` },
  });
  const record = (who: string, id: string) => `${base(who)}:r:${id}`;
  const parts = (who: string, id: string) => `${record(who, id)}:parts`;

  const HOOKS = RecordScripts.withHooks(__dirname, {
    onSave: 'sample-hooks.fixture.lua',
    onUpdate: 'sample-hooks.fixture.lua',
  });

  function storeWith(bounds: Partial<RecordBounds> = {}, scripts = HOOKS): BoundedRecordStore {
    return new BoundedRecordStore(
      redis,
      layoutOf,
      { retentionMs: bounds.retentionMs ?? HOUR_MS, maxPerOwner: bounds.maxPerOwner ?? 100 },
      scripts,
    );
  }

  const nextId = () => `rec${String(++seq).padStart(4, '0')}`;

  /** Saves a record (with the sample hook's parts) created `createdMs`; answers its id. */
  async function save(
    store: BoundedRecordStore,
    who: string,
    fields: { kind?: string; createdMs?: number; tag?: string } = {},
  ): Promise<string> {
    const id = nextId();
    const createdMs = fields.createdMs ?? Date.now() + seq;
    await store.save(
      who,
      id,
      createdMs,
      { v: '1', kind: fields.kind ?? 'a', tag: fields.tag ?? '' },
      { keys: [parts(who, id)], args: ['p1', 'p2'] },
    );
    return id;
  }

  const ids = (page: { items: Array<{ id: string }> } | null) => page?.items.map((item) => item.id);
  const asItem = (id: string, fields: FieldValues) => ({ id, fields });

  beforeAll(() => {
    redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
  });

  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('saves, reads, updates and deletes a record only for its owner, hooks included', async () => {
    const store = storeWith();
    const mine = owner();
    const theirs = owner();
    const id = await save(store, mine, { kind: 'x' });

    expect(await store.get(mine, id, ['v', 'kind', 'parts', 'nope'])).toEqual(['1', 'x', '2', null]);
    expect(await redis.lrange(parts(mine, id), 0, '-1')).toEqual(['p1', 'p2']);
    expect(await store.get(theirs, id, ['v'])).toEqual([null]);

    expect(await store.update(mine, id, { tag: 't' }, ['tag', 'note'], { args: ['hello'] })).toEqual([
      't',
      'hello',
    ]);
    expect(await store.update(theirs, id, { tag: 'u' }, ['tag'], { args: ['x'] })).toBeNull();
    await redis.hset(record(mine, id), 'locked', '1');
    expect(await store.update(mine, id, { tag: 'refused' }, ['tag'], { args: ['x'] })).toBeNull();
    expect(await store.get(mine, id, ['tag', 'note'])).toEqual(['t', 'hello']);

    expect(await store.delete(theirs, id)).toBe(false);
    expect(await store.delete(mine, id)).toBe(true);
    expect(await store.delete(mine, id)).toBe(false);
    expect(await redis.exists(record(mine, id), parts(mine, id))).toBe(0);
    expect(await redis.zscore(layoutOf(mine).index, id)).toBeNull();
    expect(await redis.zscore(`${base(mine)}:kind:x`, id)).toBeNull();
  });

  it('works without hooks: only the given fields, and an update that reads nothing back', async () => {
    const store = storeWith({}, RecordScripts.PLAIN);
    const mine = owner();
    const id = nextId();
    expect(await store.save(mine, id, Date.now(), { v: '1', kind: 'a' })).toBe(0);
    expect(await redis.hgetall(record(mine, id))).toEqual({ v: '1', kind: 'a' });
    expect(await store.update(mine, id, { v: '2' }, [])).toEqual([]);
    expect(await store.get(mine, id, ['v'])).toEqual(['2']);
  });

  it('expires a record, its companions and its index entries at creation + retention', async () => {
    const retentionMs = 60_000;
    const store = storeWith({ retentionMs });
    const mine = owner();
    const fresh = await save(store, mine);
    const ttl = await redis.pttl(record(mine, fresh));
    expect(ttl).toBeGreaterThan(retentionMs - 5_000);
    expect(ttl).toBeLessThanOrEqual(retentionMs + 1_000);
    for (const name of [parts(mine, fresh), layoutOf(mine).index, `${base(mine)}:kind:a`]) {
      expect(await redis.pttl(name)).toBeGreaterThan(retentionMs - 5_000);
    }
    // An update keeps the expiry.
    await store.update(mine, fresh, { tag: 'kept' }, [], { args: ['n'] });
    expect(await redis.pttl(record(mine, fresh))).toBeLessThanOrEqual(ttl);

    const old = await save(store, mine, { createdMs: Date.now() - retentionMs + 300 });
    expect(await store.get(mine, old, ['v'])).toEqual(['1']);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(await store.get(mine, old, ['v'])).toEqual([null]);
    expect(await redis.exists(parts(mine, old))).toBe(0);
    // Its index entry goes with the next page.
    expect(await redis.zscore(layoutOf(mine).index, old)).not.toBeNull();
    expect(ids(await store.page(mine, { limit: 10, order: 'asc', fields: ['v'] }, asItem))).toEqual([fresh]);
    expect(await redis.zscore(layoutOf(mine).index, old)).toBeNull();

    const late = nextId();
    expect(await store.save(mine, late, Date.now() - retentionMs - 1, { v: '1', kind: 'a' })).toBe(-1);
    expect(await redis.exists(record(mine, late))).toBe(0);
  });

  it('keeps an owner within its bound by evicting its oldest, with companions and field-index entries', async () => {
    const store = storeWith({ maxPerOwner: 3 });
    const mine = owner();
    const theirs = owner();
    const now = Date.now();
    const other = await save(store, theirs, { createdMs: now });
    const saved: string[] = [];
    const evicted: number[] = [];
    for (let i = 0; i < 5; i++) {
      const id = nextId();
      evicted.push(
        await store.save(
          mine,
          id,
          now + i,
          { v: '1', kind: i % 2 === 0 ? 'even' : 'odd' },
          { keys: [parts(mine, id)], args: ['p'] },
        ),
      );
      saved.push(id);
    }
    expect(evicted).toEqual([0, 0, 0, 1, 1]);
    expect(await redis.zrange(layoutOf(mine).index, 0, '-1')).toEqual(saved.slice(2));
    for (const gone of saved.slice(0, 2)) {
      expect(await redis.exists(record(mine, gone), parts(mine, gone))).toBe(0);
    }
    expect(await redis.zrange(`${base(mine)}:kind:even`, 0, '-1')).toEqual([saved[2], saved[4]]);
    expect(await redis.zrange(`${base(mine)}:kind:odd`, 0, '-1')).toEqual([saved[3]]);
    expect(await store.get(theirs, other, ['v'])).toEqual(['1']);
  });

  it('lists the records of one millisecond in the order they were saved, and a record saved again in its place', async () => {
    const store = storeWith({}, RecordScripts.PLAIN);
    const mine = owner();
    const created = Date.now();
    const saveAt = (id: string, createdMs: number) => store.save(mine, id, createdMs, { v: '1', kind: 'a' });
    // Saved before the three, created after them: the index still orders by creation.
    await saveAt('rec-later', created + 1);
    // Three in one millisecond, their ids against their order (tied scores list by id).
    const tied = ['rec-z', 'rec-m', 'rec-b'];
    for (const id of tied) await saveAt(id, created);
    const inOrder = [...tied, 'rec-later'];

    const listed = (order: 'asc' | 'desc') =>
      store.page(mine, { limit: 10, order, fields: ['v'] }, asItem).then(ids);
    expect(await listed('asc')).toEqual(inOrder);
    expect(await listed('desc')).toEqual([...inOrder].reverse());
    expect(await redis.zrange(`${base(mine)}:kind:a`, 0, '-1')).toEqual(inOrder);

    await saveAt('rec-z', created);
    expect(await listed('asc')).toEqual(inOrder);
  });

  describe('pages', () => {
    const store = () => storeWith({}, RecordScripts.PLAIN);
    const mine = owner();
    const saved: string[] = [];

    beforeAll(async () => {
      const now = Date.now();
      const made = [];
      for (let i = 0; i < 7; i++) made.push({ id: nextId(), createdMs: now + i * 10, i });
      // Saved out of creation order: the index orders by creation time.
      for (const { id, createdMs, i } of [...made].reverse()) {
        await store().save(mine, id, createdMs, {
          v: '1',
          kind: i < 4 ? 'alpha' : 'beta',
          tag: i % 2 === 0 ? 'even' : 'odd',
        });
      }
      saved.push(...made.map((m) => m.id));
    });

    async function all(query: {
      order: 'asc' | 'desc';
      limit: number;
      indexed?: string;
      tag?: string;
    }): Promise<Array<{ ids: string[]; hasMore: boolean }>> {
      const pages: Array<{ ids: string[]; hasMore: boolean }> = [];
      let after: string | undefined;
      const filter =
        query.tag === undefined
          ? undefined
          : { field: 'tag', accepts: (_id: string, value: string) => value === query.tag };
      for (;;) {
        const page = (await store().page(mine, { ...query, after, filter, fields: ['v', 'kind'] }, asItem))!;
        pages.push({ ids: ids(page)!, hasMore: page.hasMore });
        if (!page.hasMore) return pages;
        after = page.items.at(-1)!.id;
      }
    }

    it('walks the owner’s records by creation time in both orders, after a cursor', async () => {
      expect(await all({ order: 'asc', limit: 3 })).toEqual([
        { ids: saved.slice(0, 3), hasMore: true },
        { ids: saved.slice(3, 6), hasMore: true },
        { ids: saved.slice(6), hasMore: false },
      ]);
      expect(await all({ order: 'desc', limit: 4 })).toEqual([
        { ids: [...saved].reverse().slice(0, 4), hasMore: true },
        { ids: [...saved].reverse().slice(4), hasMore: false },
      ]);
      const page = await store().page(mine, { order: 'asc', limit: 1, fields: ['v', 'kind'] }, asItem);
      expect(page).toEqual({ items: [{ id: saved[0], fields: ['1', 'alpha'] }], hasMore: true });
    });

    it('pages through the field index and through a filter', async () => {
      expect(await all({ order: 'asc', limit: 2, indexed: 'beta' })).toEqual([
        { ids: saved.slice(4, 6), hasMore: true },
        { ids: saved.slice(6), hasMore: false },
      ]);
      expect(await all({ order: 'desc', limit: 2, tag: 'even' })).toEqual([
        { ids: [saved[6], saved[4]], hasMore: true },
        { ids: [saved[2], saved[0]], hasMore: false },
      ]);
      expect(await all({ order: 'asc', limit: 5, indexed: 'beta', tag: 'odd' })).toEqual([
        { ids: [saved[5]], hasMore: false },
      ]);
      expect(await all({ order: 'asc', limit: 5, indexed: 'gamma' })).toEqual([{ ids: [], hasMore: false }]);
    });

    it('answers null for a cursor that is not one of the owner’s records', async () => {
      const query = { order: 'asc' as const, limit: 2, fields: ['v'], after: saved[0] };
      expect(await store().page(owner(), query, asItem)).toBeNull();
      expect(await store().page(mine, { ...query, after: 'rec-unknown' }, asItem)).toBeNull();
    });

    it('skips what the reader refuses, and drops entries whose record is gone', async () => {
      const refused = saved[1]!;
      const skipping = (id: string, fields: FieldValues) => (id === refused ? null : asItem(id, fields));
      const page = await store().page(mine, { order: 'asc', limit: 2, fields: ['v'] }, skipping);
      expect(ids(page)).toEqual([saved[0], saved[2]]);

      // The newest of the owner's records, so the listing below (newest first) meets it before the others.
      const gone = nextId();
      await store().save(mine, gone, Date.now() + 60_000, { v: '1', kind: 'beta' });
      await redis.del(record(mine, gone));
      const listed = await store().page(
        mine,
        { order: 'desc', limit: 1, indexed: 'beta', fields: ['v'] },
        asItem,
      );
      expect(ids(listed)).toEqual([saved[6]]);
      expect(await redis.zscore(`${base(mine)}:kind:beta`, gone)).toBeNull();
      expect(await redis.zscore(layoutOf(mine).index, gone)).not.toBeNull();
    });
  });
});
