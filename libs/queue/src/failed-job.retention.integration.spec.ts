import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { queueNameFor } from '@mgw/contracts';
import {
  boundedFailure,
  FAILED_JOB_MAX_BYTES,
  FAILED_REASON_MAX_CHARS,
  failedJobsKept,
  summarizeFailedJob,
} from './failed-job.retention';
import { jobOptionsFor } from './job-options';
import { ModelQueueConsumer } from './model-queue.consumer';
import { waitFor } from '@mgw/testing';

describe('failed job retention', () => {
  it('keeps as many failed jobs as configured, but no more than fit in the byte budget', () => {
    expect(failedJobsKept(1000, 4 * 1024 * 1024)).toBe(1000);
    expect(failedJobsKept(1000, 10 * FAILED_JOB_MAX_BYTES)).toBe(10);
    expect(failedJobsKept(1000, FAILED_JOB_MAX_BYTES - 1)).toBe(0);
    expect(failedJobsKept(0, 4 * 1024 * 1024)).toBe(0);
  });

  it('summarises untrusted data with bounded fields only', () => {
    expect(summarizeFailedJob({ requestId: 'r1', model: 'm', request: { big: 'x' } }, 42)).toEqual({
      summary: true,
      requestId: 'r1',
      model: 'm',
      dataBytes: 42,
    });
    const odd = summarizeFailedJob({ requestId: 'x'.repeat(10_000), model: 7 }, 1);
    expect(odd.requestId!.length).toBeLessThanOrEqual(128);
    expect(odd.model).toBeNull();
    expect(summarizeFailedJob(null, 0)).toEqual({
      summary: true,
      requestId: null,
      model: null,
      dataBytes: 0,
    });
  });

  it('bounds the message and stack of a failure, and keeps a small one as it is', () => {
    const small = new Error('short');
    small.stack = 'Error: short\n    at somewhere (file.js:1:1)';
    expect(boundedFailure(small)).toBe(small);
    const big = boundedFailure(new TypeError('y'.repeat(100_000)));
    expect(big.name).toBe('TypeError');
    expect(big.message.length).toBeLessThanOrEqual(FAILED_REASON_MAX_CHARS);
    expect(big.stack!.length).toBeLessThanOrEqual(2048);
    expect(boundedFailure('a string').message).toBe('a string');
  });

  /** Real Redis and a real BullMQ Worker: what stays of a large job that failed with a large error. */
  describe('on real Redis', () => {
    const namespace = `unit-retention-${randomBytes(5).toString('hex')}`;
    let connection: Redis;
    let commands: Redis;
    let consumer: ModelQueueConsumer;
    let queue: Queue;

    beforeAll(async () => {
      connection = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: null });
      commands = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
      await Promise.all([connection.connect(), commands.connect()]);
    });

    afterAll(async () => {
      await consumer?.close();
      await queue?.obliterate({ force: true });
      await queue?.close();
      const keys = await commands.keys(`${namespace}:*`);
      if (keys.length > 0) await commands.del(...keys);
      await Promise.all([connection.quit(), commands.quit()]);
    });

    it(`keeps a failed job in at most ${FAILED_JOB_MAX_BYTES} bytes, whatever its data and error`, async () => {
      consumer = new ModelQueueConsumer(
        connection,
        namespace,
        { error: () => undefined, warn: () => undefined },
        10_000,
      );
      queue = new Queue(queueNameFor('chat', 'big'), { connection: commands, prefix: namespace });
      const requestId = `req-${randomBytes(6).toString('hex')}`;
      const request = { messages: [{ role: 'user', content: 'z'.repeat(512 * 1024) }] };
      consumer.consume({ kind: 'chat', model: 'big', concurrency: 1 }, (job) =>
        Promise.reject(new Error(`refused ${JSON.stringify(job.data).slice(0, 100_000)}`)),
      );
      await queue.add('chat', { requestId, model: 'big', request }, jobOptionsFor(requestId, 10));

      const jobKey = `${namespace}:${queueNameFor('chat', 'big')}:${requestId}`;
      const data = await waitFor(
        'the failed job, its data summarised',
        async () => {
          const stored = (await commands.hget(jobKey, 'data')) ?? '';
          const failed = await commands.zscore(
            `${namespace}:${queueNameFor('chat', 'big')}:failed`,
            requestId,
          );
          return failed !== null && stored.length < 1024 ? stored : null;
        },
        10_000,
      );
      expect(JSON.parse(data)).toEqual({
        summary: true,
        requestId,
        model: 'big',
        dataBytes: expect.any(Number) as number,
      });
      expect((JSON.parse(data) as { dataBytes: number }).dataBytes).toBeGreaterThan(512 * 1024);
      const kept = (await commands.call('MEMORY', 'USAGE', jobKey, 'SAMPLES', '0')) as number;
      expect(kept).toBeLessThanOrEqual(FAILED_JOB_MAX_BYTES);
      expect(await commands.hget(jobKey, 'failedReason')).toMatch(/^refused /);
    });

    it('strips a job that BullMQ fails for stalling too often, which never reaches the processor', async () => {
      await consumer.close();
      const model = 'stalling';
      const stallingQueue = new Queue(queueNameFor('chat', model), {
        connection: commands,
        prefix: namespace,
      });
      try {
        const requestId = `req-${randomBytes(6).toString('hex')}`;
        await stallingQueue.add(
          'chat',
          { requestId, model, request: { content: 'w'.repeat(256 * 1024) } },
          jobOptionsFor(requestId, 10),
        );
        const jobKey = `${namespace}:${queueNameFor('chat', model)}:${requestId}`;
        // What BullMQ's stalled check writes into a job that stalled more than maxStalledCount times.
        await commands.hset(jobKey, 'defa', 'job stalled more than allowable limit');
        let processed = false;
        consumer = new ModelQueueConsumer(
          connection,
          namespace,
          { error: () => undefined, warn: () => undefined },
          10_000,
        );
        consumer.consume({ kind: 'chat', model, concurrency: 1 }, () => {
          processed = true;
          return Promise.resolve();
        });
        const data = await waitFor(
          'the stalled job, its data summarised',
          async () => {
            const stored = (await commands.hget(jobKey, 'data')) ?? '';
            return stored.length < 1024 ? stored : null;
          },
          10_000,
        );
        expect(JSON.parse(data)).toMatchObject({ summary: true, requestId, model });
        expect(await commands.hget(jobKey, 'failedReason')).toBe('job stalled more than allowable limit');
        expect(processed).toBe(false);
      } finally {
        await consumer.close();
        await stallingQueue.obliterate({ force: true });
        await stallingQueue.close();
      }
    });
  });
});
