import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { SCHEDULING_BANDS } from '@mgw/contracts';
import { JobFeed } from './job-feed';
import { FairScheduler } from './scheduling/fair.scheduler';

/** Real Redis and BullMQ: what a batcher relies on — one blocking take, then what else waits, at once. */
describe('JobFeed', () => {
  const namespace = `unit-feed-${randomBytes(5).toString('hex')}`;
  const silent = { error: () => undefined, warn: () => undefined };
  let connection: Redis;
  let commands: Redis;

  beforeAll(async () => {
    connection = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: null });
    commands = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
    await Promise.all([connection.connect(), commands.connect()]);
  });

  afterAll(async () => {
    const keys = await commands.keys(`${namespace}:*`);
    if (keys.length > 0) await commands.del(...keys);
    await Promise.all([connection.quit(), commands.quit()]);
  });

  it('takes the first job waiting, then up to max of those already waiting, and completes them', async () => {
    const queue = new Queue('chat.batch', { connection: commands, prefix: namespace });
    const feed = new JobFeed(
      connection,
      { queue: 'chat.batch', prefix: namespace, jobLockMs: 10_000 },
      silent,
    );
    try {
      await feed.start();
      await queue.addBulk(
        Array.from({ length: 12 }, (_, i) => ({ name: 'chat', data: { i }, opts: { jobId: `b${i}` } })),
      );
      const first = await feed.next();
      expect(first?.job.id).toBe('b0');
      const batch = await feed.takeReady(8);
      expect(batch.map((taken) => taken.job.id)).toEqual(['b1', 'b2', 'b3', 'b4', 'b5', 'b6', 'b7', 'b8']);
      expect(new Set(batch.map((taken) => taken.token)).size).toBe(8);
      // Fewer waiting than asked: what there is, and the taking stops there.
      const rest = await feed.takeReady(8);
      expect(rest.map((taken) => taken.job.id)).toEqual(['b9', 'b10', 'b11']);
      expect(await feed.takeReady(4)).toEqual([]);
      for (const taken of [first!, ...batch, ...rest]) await feed.complete(taken, false);
      expect(await queue.getActiveCount()).toBe(0);
      expect(await queue.getWaitingCount()).toBe(0);
    } finally {
      await feed.close();
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('completes a job and takes the next waiting one in the same call, under the same token', async () => {
    const queue = new Queue('chat.chain', { connection: commands, prefix: namespace });
    const feed = new JobFeed(
      connection,
      { queue: 'chat.chain', prefix: namespace, jobLockMs: 10_000 },
      silent,
    );
    try {
      await feed.start();
      await queue.addBulk([0, 1].map((i) => ({ name: 'chat', data: { i }, opts: { jobId: `c${i}` } })));
      const first = (await feed.next())!;
      const next = await feed.complete(first, true);
      expect(next?.job.id).toBe('c1');
      expect(next?.token).toBe(first.token);
      expect(await feed.complete(next!, true)).toBeUndefined();
    } finally {
      await feed.close();
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('sends no release while it takes direct jobs, and releases again once it takes a scheduled one', async () => {
    const queue = new Queue('chat.sched', { connection: commands, prefix: namespace });
    const feed = new JobFeed(
      connection,
      {
        queue: 'chat.sched',
        prefix: namespace,
        jobLockMs: 10_000,
        scheduling: { kind: 'chat', model: 'sched', minShare: 0 },
      },
      silent,
    );
    const releases = jest.spyOn(FairScheduler.prototype, 'release');
    const scheduler = new FairScheduler(commands, namespace);
    const direct = SCHEDULING_BANDS.normal.direct;
    try {
      await feed.start();
      await queue.addBulk(
        ['d0', 'd1', 'd2'].map((id) => ({ name: 'chat', data: {}, opts: { jobId: id, priority: direct } })),
      );
      const taken = [await feed.next(), await feed.next(), await feed.next()];
      expect(taken.map((one) => one?.job.id)).toEqual(['d0', 'd1', 'd2']);
      // The first release found nothing parked; the direct jobs after it cost none.
      expect(releases).toHaveBeenCalledTimes(1);

      // The model saturates: a tenant's jobs are parked and scheduled.
      for (const id of ['p0', 'p1', 'p2']) {
        await queue.add('chat', {}, { jobId: id, priority: SCHEDULING_BANDS.normal.parked });
        await scheduler.arrive('chat', 'sched', { id, tenant: 'a', tier: 'normal', weight: 1 });
      }
      // Taken in queue order (no release went first), which turns releases back on for the next fetches.
      expect((await feed.takeReady(1)).map((one) => one.job.id)).toEqual(['p0']);
      expect(releases).toHaveBeenCalledTimes(1);
      expect((await feed.takeReady(1)).map((one) => one.job.id)).toEqual(['p1']);
      expect(releases).toHaveBeenCalledTimes(2);
      for (const one of taken) await feed.complete(one!, false);
    } finally {
      releases.mockRestore();
      await feed.close();
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });
});
