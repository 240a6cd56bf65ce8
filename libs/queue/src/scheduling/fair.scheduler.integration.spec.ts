import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { parkedPriorityOf, SCHEDULING_BANDS, type SchedulingTier } from '@mgw/contracts';
import { FairScheduler, UNSATURATED_BACKLOG } from './fair.scheduler';

/** Real Redis and BullMQ: the scheduler's scripts over a real queue's prioritized set. */
describe('FairScheduler', () => {
  const namespace = `unit-sched-${randomBytes(5).toString('hex')}`;
  let redis: Redis;
  let scheduler: FairScheduler;
  let queue: Queue;
  let model = 0;
  let modelId: string;
  let added = 0;

  beforeAll(async () => {
    redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    scheduler = new FairScheduler(redis, namespace);
  });

  beforeEach(() => {
    modelId = `m${model++}`;
    queue = new Queue(`chat.${modelId}`, { connection: redis, prefix: namespace });
  });

  afterEach(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
  });

  afterAll(async () => {
    const keys = await redis.keys(`${namespace}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  /** Queues a job parked and schedules it, as a gateway does while its model is saturated. */
  async function submit(tenant: string, tier: SchedulingTier = 'normal', weight = 1): Promise<string> {
    const id = `${tenant}-${added++}`;
    await queue.add('chat', {}, { jobId: id, priority: parkedPriorityOf(tier) });
    const outcome = await scheduler.arrive('chat', modelId, { id, tenant, tier, weight });
    expect(['parked', 'parked-with-room']).toContain(outcome);
    return id;
  }

  it('parks a job queued in its parked band even with room, saying it had room', async () => {
    const parkedBand = async (id: string) =>
      Math.floor(Number(await redis.zscore(`${namespace}:chat.${modelId}:prioritized`, id)) / 2 ** 32);
    const add = async (tenant: string) => {
      const id = `${tenant}-${added++}`;
      await queue.add('chat', {}, { jobId: id, priority: parkedPriorityOf('normal') });
      return {
        id,
        outcome: await scheduler.arrive('chat', modelId, { id, tenant, tier: 'normal', weight: 1 }),
      };
    };
    const first = await add('a');
    expect(first.outcome).toBe('parked-with-room');
    expect(await parkedBand(first.id)).toBe(SCHEDULING_BANDS.normal.parked);
    // Someone waits now: no room.
    expect((await add('b')).outcome).toBe('parked');
    expect(await takeTenants(2)).toEqual(['a', 'b']);
    expect((await add('c')).outcome).toBe('parked-with-room');
  });

  /** Releases one job and takes the job a worker's fetch gets (the lowest priority, oldest first). */
  async function take(minShare = 0): Promise<{ id: string; priority: number } | undefined> {
    await scheduler.release('chat', modelId, 1, minShare);
    const [id] = await redis.zrange(`${namespace}:chat.${modelId}:prioritized`, '0', '0');
    if (id === undefined) return undefined;
    const priority = Number(await redis.hget(`${namespace}:chat.${modelId}:${id}`, 'priority'));
    await queue.remove(id);
    return { id, priority };
  }

  async function takeTenants(n: number, minShare = 0): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      const next = await take(minShare);
      if (next) out.push(next.id.split('-')[0]!);
    }
    return out;
  }

  it('alternates between two tenants whatever their backlogs, each in its own order', async () => {
    const a = [];
    for (let i = 0; i < 6; i++) a.push(await submit('a'));
    const b = [await submit('b'), await submit('b')];
    const order: string[] = [];
    for (let i = 0; i < 8; i++) order.push((await take())!.id);
    expect(order).toEqual([a[0], b[0], a[1], b[1], a[2], a[3], a[4], a[5]]);
  });

  it('releases a job to its tier’s released band, behind the jobs released before it', async () => {
    const [a1, a2, b1] = [await submit('a'), await submit('a'), await submit('b')];
    for (let i = 0; i < 3; i++) await scheduler.release('chat', modelId, 1, 0);
    const flat = await redis.zrange(`${namespace}:chat.${modelId}:prioritized`, '0', '-1', 'WITHSCORES');
    // In the order released (a's turn, b's, a's), not the order queued.
    expect([flat[0], flat[2], flat[4]]).toEqual([a1, b1, a2]);
    for (const score of [flat[1], flat[3], flat[5]]) {
      expect(Math.floor(Number(score) / 2 ** 32)).toBe(SCHEDULING_BANDS.normal.released);
    }
  });

  it('takes a job released on its tenant’s turn next, even with a released job no fetch took ahead of it', async () => {
    for (let i = 0; i < 20; i++) await submit('flood');
    // A release whose fetch took something else (a job queued direct between the two): one released job
    // too many, for good.
    await scheduler.release('chat', modelId, 1, 0);
    const single = await submit('single');
    // Its turn comes with the next release; the flood's older jobs released after it must not pass it.
    const order: string[] = [];
    for (let i = 0; i < 3; i++) order.push((await take())!.id);
    expect(order.slice(0, 2)).toContain(single);
  });

  it('releases nothing in place of stale leftovers, so they never pile up', async () => {
    const a = [await submit('a'), await submit('a')];
    // Released just now: their fetches may still be on their way, so each release gets its own job.
    await expect(scheduler.release('chat', modelId, 1, 0)).resolves.toBe(1);
    await expect(scheduler.release('chat', modelId, 1, 0)).resolves.toBe(1);
    // Many jobs queued since, and still there: their fetches passed them over; the next two fetches take them.
    for (let i = 0; i < 20; i++) await submit('b');
    await expect(scheduler.release('chat', modelId, 2, 0)).resolves.toBe(0);
    expect(await redis.zrange(`${namespace}:chat.${modelId}:prioritized`, '0', '1')).toEqual(a);
    await expect(scheduler.release('chat', modelId, 3, 0)).resolves.toBe(1);
  });

  it('serves tenants in proportion to their weights', async () => {
    for (let i = 0; i < 40; i++) await submit('heavy', 'normal', 2);
    for (let i = 0; i < 40; i++) await submit('light', 'normal', 1);
    const served = await takeTenants(30);
    expect(served.filter((t) => t === 'heavy')).toHaveLength(20);
    expect(served.filter((t) => t === 'light')).toHaveLength(10);
  });

  it('serves a tenant that just arrived next, not behind another’s backlog', async () => {
    for (let i = 0; i < 20; i++) await submit('flood');
    await takeTenants(5);
    const single = await submit('single');
    const next = await take();
    expect(next?.id).toBe(single);
  });

  it('gives no credit for time away: a tenant coming straight back waits its turn', async () => {
    for (let i = 0; i < 20; i++) await submit('flood');
    await takeTenants(5);
    await submit('visitor');
    expect(await takeTenants(1)).toEqual(['visitor']);
    await submit('visitor');
    expect(await takeTenants(2)).toEqual(['flood', 'visitor']);
  });

  it('runs high before normal, and gives low its minimum share while normal waits', async () => {
    for (let i = 0; i < 60; i++) await submit('n', 'normal');
    for (let i = 0; i < 10; i++) await submit('l', 'low');
    const h = await submit('h', 'high');
    expect((await take(0.1))?.id).toBe(h);
    const served = await takeTenants(40, 0.1);
    expect(served.filter((t) => t === 'l')).toHaveLength(4);
    expect(served.filter((t) => t === 'n')).toHaveLength(36);
  });

  it('gives low nothing while normal waits when the minimum share is 0', async () => {
    for (let i = 0; i < 10; i++) await submit('n', 'normal');
    for (let i = 0; i < 3; i++) await submit('l', 'low');
    expect(await takeTenants(13, 0)).toEqual([...Array(10).fill('n'), 'l', 'l', 'l']);
  });

  it('counts each tenant’s parked jobs and weights, and forgets a removed job', async () => {
    await submit('a', 'normal', 3);
    const gone = await submit('a', 'normal', 3);
    await submit('b', 'low', 1);
    expect(await scheduler.waiting('chat', modelId, 5)).toEqual({
      tenants: 2,
      top: [
        { tenant: 'a', waiting: 2 },
        { tenant: 'b', waiting: 1 },
      ],
    });
    const tenants = `${namespace}:sched:chat.${modelId}:tenants`;
    expect(await redis.hget(tenants, 'wsum')).toBe('4');
    await queue.remove(gone);
    await scheduler.forget('chat', modelId, gone);
    // Equal counts: reverse member order, as ZREVRANGE gives them.
    expect((await scheduler.waiting('chat', modelId, 5)).top).toEqual([
      { tenant: 'b', waiting: 1 },
      { tenant: 'a', waiting: 1 },
    ]);
    await takeTenants(2);
    expect(await scheduler.waiting('chat', modelId, 5)).toEqual({ tenants: 0, top: [] });
    // Nobody waits: the weights, clocks and credit are gone with them (an idle model keeps no scheduler state).
    expect(await redis.exists(tenants)).toBe(0);
    expect(await redis.hlen(`${namespace}:sched:chat.${modelId}:owners`)).toBe(0);
  });

  it('skips a job taken or removed behind its back, and schedules nothing for a job already gone', async () => {
    const first = await submit('a');
    const second = await submit('a');
    await queue.remove(first);
    expect((await take())?.id).toBe(second);
    await expect(
      scheduler.arrive('chat', modelId, { id: 'never', tenant: 'a', tier: 'normal', weight: 1 }),
    ).resolves.toBe('gone');
    expect(await scheduler.waiting('chat', modelId, 5)).toEqual({ tenants: 0, top: [] });
  });

  describe('a job queued direct, as the gateway queues it', () => {
    /** Queues a job in its tier's direct band and schedules it; the scheduler's answer. */
    async function queueDirect(tenant: string, tier: SchedulingTier = 'normal') {
      const id = `${tenant}-${added++}`;
      await queue.add('chat', {}, { jobId: id, priority: SCHEDULING_BANDS[tier].direct });
      return { id, outcome: await scheduler.arrive('chat', modelId, { id, tenant, tier, weight: 1 }) };
    }

    const bandOf = async (id: string) =>
      Math.floor(Number(await redis.zscore(`${namespace}:chat.${modelId}:prioritized`, id)) / 2 ** 32);

    it('stays direct, unscheduled, while the model has room for it', async () => {
      for (let i = 1; i <= UNSATURATED_BACKLOG; i++) {
        const { id, outcome } = await queueDirect('a');
        expect(outcome).toBe('direct');
        expect(await bandOf(id)).toBe(SCHEDULING_BANDS.normal.direct);
      }
      expect(await scheduler.waiting('chat', modelId, 5)).toEqual({ tenants: 0, top: [] });
      // Nothing parked: a release says so (null), and leaves no state.
      await expect(scheduler.release('chat', modelId, 1, 0)).resolves.toBeNull();
      expect(await redis.keys(`${namespace}:sched:chat.${modelId}:*`)).toEqual([]);
    });

    it('stays direct past the bound while its tenant is alone, and is parked when another tenant comes', async () => {
      const direct = [];
      for (let i = 0; i < UNSATURATED_BACKLOG; i++) direct.push((await queueDirect('flood')).id);
      // Past the bound, but nobody else waits: the tenant's own order is the queue's, so nothing is parked
      // and a worker's release costs one lookup.
      const run = [];
      for (let i = 0; i < 4; i++) {
        const job = await queueDirect('flood');
        expect(job.outcome).toBe('direct');
        run.push(job.id);
      }
      await expect(scheduler.release('chat', modelId, 1, 0)).resolves.toBeNull();
      // It is the one tenant waiting, with every job it has queued.
      expect(await scheduler.waiting('chat', modelId, 5)).toEqual({
        tenants: 1,
        top: [{ tenant: 'flood', waiting: UNSATURATED_BACKLOG + 4 }],
      });
      // Another tenant must wait: the solo run past the bound is parked first, in its order, then its job.
      const single = await queueDirect('single');
      expect(single.outcome).toBe('parked');
      for (const id of [...run, single.id]) expect(await bandOf(id)).toBe(SCHEDULING_BANDS.normal.parked);
      for (const id of direct) expect(await bandOf(id)).toBe(SCHEDULING_BANDS.normal.direct);
      expect(await scheduler.waiting('chat', modelId, 5)).toEqual({
        tenants: 2,
        top: [
          { tenant: 'flood', waiting: 4 },
          { tenant: 'single', waiting: 1 },
        ],
      });
      // Someone waits now: every later job is parked, whatever the backlog.
      expect((await queueDirect('flood')).outcome).toBe('parked');
      const order: string[] = [];
      for (let i = 0; i < UNSATURATED_BACKLOG + 3; i++) order.push((await take())!.id);
      expect(order).toEqual([...direct, run[0], single.id, run[1]]);
    });

    it('keeps a solo run direct when its own tenant’s next job comes parked, from a gateway with a stale mark', async () => {
      const run = [];
      for (let i = 0; i < UNSATURATED_BACKLOG + 3; i++) run.push((await queueDirect('flood')).id);
      // A gateway that last saw the model saturated queues the tenant's next job in the parked band.
      const late = `flood-${added++}`;
      await queue.add('chat', {}, { jobId: late, priority: parkedPriorityOf('normal') });
      const outcome = await scheduler.arrive('chat', modelId, {
        id: late,
        tenant: 'flood',
        tier: 'normal',
        weight: 1,
      });
      // It joins the run at its place; nothing of the run is parked.
      expect(outcome).toBe('direct');
      for (const id of [...run, late]) expect(await bandOf(id)).toBe(SCHEDULING_BANDS.normal.direct);
      expect(await scheduler.waiting('chat', modelId, 5)).toEqual({
        tenants: 1,
        top: [{ tenant: 'flood', waiting: UNSATURATED_BACKLOG + 4 }],
      });
      // The run is still the solo one: another tenant's job parks it, in its order, the late job last.
      expect((await queueDirect('single')).outcome).toBe('parked');
      const order: string[] = [];
      for (let i = 0; i < UNSATURATED_BACKLOG + 5; i++) order.push((await take())!.id);
      expect(order).toEqual([
        ...run.slice(0, UNSATURATED_BACKLOG),
        run[UNSATURATED_BACKLOG],
        `single-${added - 1}`,
        ...run.slice(UNSATURATED_BACKLOG + 1),
        late,
      ]);
    });

    it('forgets a solo run once its tier is back under the bound', async () => {
      for (let i = 0; i < UNSATURATED_BACKLOG + 2; i++) await queueDirect('flood');
      for (let i = 0; i < UNSATURATED_BACKLOG + 2; i++) await take();
      // The run drained: a new tenant past nobody's backlog is direct, and ends the solo run.
      expect((await queueDirect('next')).outcome).toBe('direct');
      for (let i = 1; i < UNSATURATED_BACKLOG; i++) await queueDirect('next');
      // Its own run past the bound is its own: nothing of the old solo tenant's is parked into its line.
      expect((await queueDirect('next')).outcome).toBe('direct');
      expect((await queueDirect('other')).outcome).toBe('parked');
      const { tenants, top } = await scheduler.waiting('chat', modelId, 5);
      expect(tenants).toBe(2);
      expect(top).toHaveLength(2);
      expect(top).toEqual(
        expect.arrayContaining([
          { tenant: 'next', waiting: 1 },
          { tenant: 'other', waiting: 1 },
        ]),
      );
    });

    it('releases nothing for a fetch that takes an unscheduled job, so fair order holds after them', async () => {
      for (let i = 0; i < UNSATURATED_BACKLOG; i++) await queueDirect('a');
      for (let i = 0; i < 6; i++) await queueDirect('a');
      for (let i = 0; i < 3; i++) await queueDirect('b');
      // Each take releases first, as a worker's fetch does: the unscheduled jobs go first, and the releases
      // sent before them must not pile up released jobs to be taken in queue order (a, a, a, b, …).
      expect(await takeTenants(UNSATURATED_BACKLOG)).toEqual(Array(UNSATURATED_BACKLOG).fill('a'));
      expect(await takeTenants(6)).toEqual(['a', 'b', 'a', 'b', 'a', 'b']);
    });

    it('parks a job that has room while another tier’s solo run saturates the model: a lower tier gets its share', async () => {
      for (let i = 0; i < UNSATURATED_BACKLOG + 20; i++) {
        expect((await queueDirect('lines', 'batch')).outcome).toBe('direct');
      }
      // Interactive work arrives with room ahead of it, and keeps coming: it is served first, by turn, and
      // the batch tier keeps its minimum share of the fetches instead of none.
      const taken: string[] = [];
      for (let i = 0; i < 40; i++) {
        expect((await queueDirect('live')).outcome).toBe('parked');
        taken.push((await take(0.1))!.id.split('-')[0]!);
      }
      const batch = taken.filter((tenant) => tenant === 'lines').length;
      expect(batch).toBeGreaterThanOrEqual(3);
      expect(batch).toBeLessThanOrEqual(5);
      // `high` goes first.
      const urgent = await queueDirect('urgent', 'high');
      expect((await take(0.1))?.id).toBe(urgent.id);
    });

    it('is parked when another tenant has parked work, even in an empty queue', async () => {
      for (let i = 0; i < 20; i++) await submit('flood');
      const { id, outcome } = await queueDirect('single');
      expect(outcome).toBe('parked');
      expect(await bandOf(id)).toBe(SCHEDULING_BANDS.normal.parked);
      expect((await take())?.id).not.toBe(undefined);
      expect(await takeTenants(1)).toEqual(['single']);
    });
  });
});
