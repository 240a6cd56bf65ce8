import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { queueNameFor } from '@mgw/contracts';
import { waitFor } from '@mgw/testing';
import { ModelQueueConsumer } from './model-queue.consumer';

/** Real Redis and real BullMQ Workers: one fetch loop per model, running its concurrency exactly. */
describe('ModelQueueConsumer', () => {
  const namespace = `unit-consumer-${randomBytes(5).toString('hex')}`;
  let connection: Redis;
  let commands: Redis;
  let consumer: ModelQueueConsumer;
  let queue: Queue;
  let model = 0;

  beforeAll(async () => {
    connection = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: null });
    commands = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
    await Promise.all([connection.connect(), commands.connect()]);
  });

  afterEach(async () => {
    await consumer.close();
    await queue.obliterate({ force: true });
    await queue.close();
  });

  afterAll(async () => {
    const keys = await commands.keys(`${namespace}:*`);
    if (keys.length > 0) await commands.del(...keys);
    await Promise.all([connection.quit(), commands.quit()]);
  });

  /** A new model's consumer and queue, for one case (closed after it). */
  function newModel(): string {
    const id = `m${++model}`;
    consumer = new ModelQueueConsumer(
      connection,
      namespace,
      { error: () => undefined, warn: () => undefined },
      10_000,
    );
    queue = new Queue(queueNameFor('chat', id), { connection: commands, prefix: namespace });
    return id;
  }

  /**
   * Starts consuming with `concurrency`, adds `jobs` jobs that each wait for a release, and reports the most
   * jobs that ran at once, then lets them all finish.
   */
  async function mostAtOnce(concurrency: number, jobs: number): Promise<number> {
    const id = newModel();
    let running = 0;
    let most = 0;
    let finished = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    consumer.consume({ kind: 'chat', model: id, concurrency }, async () => {
      running++;
      most = Math.max(most, running);
      await released;
      running--;
      finished++;
    });
    await queue.addBulk(
      Array.from({ length: jobs }, (_, i) => ({ name: 'job', data: {}, opts: { jobId: `j${i}` } })),
    );
    await waitFor('the jobs to fill the concurrency', () => running >= Math.min(concurrency, jobs), 10_000);
    await sleep(300); // long enough for a loop with too large a share to take one more
    const seen = most;
    release();
    await waitFor('every job to finish', () => finished === jobs, 10_000);
    return seen;
  }

  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('runs exactly the concurrency at once', async () => {
    expect(await mostAtOnce(5, 12)).toBe(5);
  });

  it('never runs more than a small concurrency, with more jobs waiting', async () => {
    expect(await mostAtOnce(2, 6)).toBe(2);
  });

  describe('gated', () => {
    /**
     * A gate of `slots` permits, taken before a job is fetched and set aside for the next job to start (as the
     * upstream pool does); waiters are woken by a release.
     */
    class Slots {
      held = 0;
      reservations = 0;
      readonly setAside: Array<{ release(): void }> = [];
      private readonly waiters: Array<() => void> = [];

      constructor(private slots: number) {}

      async reserve(signal: AbortSignal): Promise<{ release(): void }> {
        while (this.held >= this.slots) {
          await new Promise<void>((resolve) => {
            this.waiters.push(resolve);
            signal.addEventListener('abort', () => resolve(), { once: true });
          });
          signal.throwIfAborted();
        }
        this.held++;
        this.reservations++;
        let released = false;
        const permit = {
          release: () => {
            if (released) return;
            released = true;
            this.held--;
            this.waiters.shift()?.();
          },
        };
        return permit;
      }

      /** What the consumer reserves: a permit set aside, given back unless a job took it. */
      async reserveAside(signal: AbortSignal): Promise<{ release(): void }> {
        const permit = await this.reserve(signal);
        this.setAside.push(permit);
        return {
          release: () => {
            const index = this.setAside.indexOf(permit);
            if (index < 0) return;
            this.setAside.splice(index, 1);
            permit.release();
          },
        };
      }

      /** Reservations waiting for a permit. */
      get waiting(): number {
        return this.waiters.length;
      }

      grow(by: number): void {
        this.slots += by;
        for (const wake of this.waiters.splice(0)) wake();
      }
    }

    it('takes a job only with a reservation, leaves the rest waiting in the queue, and gives slots back', async () => {
      const id = newModel();
      const gate = new Slots(2);
      let running = 0;
      let finished = 0;
      let reserved = 0;
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const stop = new AbortController();
      const gated = { reserve: (signal: AbortSignal) => gate.reserveAside(signal) };
      consumer.consume({ kind: 'chat', model: id, concurrency: 8, gate: gated }, async () => {
        // A job the loop took after waiting on the empty queue comes without a permit set aside: the handler
        // takes one itself, as the upstream pool does.
        const reservation = gate.setAside.shift() ?? null;
        if (reservation !== null) reserved++;
        const held = reservation ?? (await gate.reserve(stop.signal));
        running++;
        await released;
        running--;
        finished++;
        held.release();
      });
      // Idle: no loop holds a reservation while it waits for a job.
      await sleep(300);
      expect(gate.held).toBe(0);
      await queue.addBulk(
        Array.from({ length: 5 }, (_, i) => ({ name: 'job', data: {}, opts: { jobId: `g${i}` } })),
      );
      await waitFor('two jobs running', () => running === 2, 10_000);
      await sleep(300);
      // The worker's concurrency (8) would allow more: the gate does not, and the rest stays queued.
      expect(running).toBe(2);
      expect(await queue.getWaitingCount()).toBe(3);
      gate.grow(1);
      await waitFor('a third job', () => running === 3, 10_000);
      expect(await queue.getWaitingCount()).toBe(2);
      release();
      await waitFor('every job to finish', () => finished === 5, 10_000);
      // Idle again: the loops looked for more jobs and gave every reservation back.
      await waitFor('every reservation back', () => gate.held === 0, 10_000);
      expect(reserved).toBeGreaterThanOrEqual(4);
      stop.abort();
    });

    it('waits for two reservations at once while jobs wait, so slots freed together are taken together', async () => {
      const id = newModel();
      const gate = new Slots(2);
      const gated = { reserve: (signal: AbortSignal) => gate.reserveAside(signal) };
      let running = 0;
      let finished = 0;
      const ends: Array<() => void> = [];
      // Set when the case ends, passed or not: every job then ends at once, so the consumer closes.
      let draining = false;
      consumer.consume({ kind: 'chat', model: id, concurrency: 8, gate: gated }, async () => {
        const held = gate.setAside.shift()!;
        running++;
        if (!draining) await new Promise<void>((resolve) => ends.push(resolve));
        running--;
        finished++;
        held.release();
      });
      await queue.addBulk(
        Array.from({ length: 6 }, (_, i) => ({ name: 'job', data: {}, opts: { jobId: `t${i}` } })),
      );
      try {
        await waitFor('two jobs running', () => running === 2, 10_000);
        // Both slots busy, four jobs queued: two reservations wait, not one.
        await waitFor('two reservations waiting', () => gate.waiting === 2, 10_000);
        expect(gate.held).toBe(2);
        // Both slots freed at once: both waiting reservations take them, and two more jobs start.
        for (const end of ends.splice(0)) end();
        await waitFor('two more jobs running', () => finished === 2 && running === 2, 10_000);
        expect(await queue.getWaitingCount()).toBe(2);
      } finally {
        draining = true;
        for (const end of ends.splice(0)) end();
      }
      await waitFor('every job to finish', () => finished === 6, 10_000);
      await waitFor('every reservation back', () => gate.held === 0, 10_000);
    });
  });
});
