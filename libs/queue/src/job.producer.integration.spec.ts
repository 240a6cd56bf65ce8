import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { parkedPriorityOf, SCHEDULING_BANDS } from '@mgw/contracts';
import { type ChatJobData } from '@mgw/request';
import { JobProducer } from './job.producer';
import { UNSATURATED_BACKLOG } from './scheduling/fair.scheduler';

/** Who a job is scheduled as: its key's team when it has one, else its key (real Redis, its own namespace). */
describe('JobProducer tenants', () => {
  const namespace = `unit-producer-${randomBytes(5).toString('hex')}`;
  let redis: Redis;
  let producer: JobProducer;

  beforeAll(async () => {
    redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: null });
    await redis.connect();
    producer = new JobProducer(redis, namespace, 0);
  });

  afterAll(async () => {
    await producer.queueFor('chat', 'm').close();
    await producer.queueFor('chat', 'busy').close();
    const keys = await redis.keys(`${namespace}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it("hands a team's job to the scheduler as its team, at the weight given, and a team-less key's as the key", async () => {
    const arrive = jest.spyOn(producer.scheduler, 'arrive').mockResolvedValue('direct');
    const job = (requestId: string, teamId?: string) =>
      ({
        requestId,
        model: 'm',
        keyId: `key_${'0a'.repeat(12)}`,
        ...(teamId ? { teamId } : {}),
        priority: parkedPriorityOf('normal'),
      }) as unknown as ChatJobData;
    const team = `team_${'0b'.repeat(12)}`;
    await producer.enqueue('chat', job('req_team_job_1', team), 4);
    await producer.enqueue('chat', job('req_team_job_2'), 1);
    expect(arrive.mock.calls.map(([, , scheduled]) => [scheduled.tenant, scheduled.weight])).toEqual([
      [team, 4],
      [`key_${'0a'.repeat(12)}`, 1],
    ]);
  });

  it('sends an add again when a Cluster node answers NOSCRIPT, once landed whatever the tries', async () => {
    jest.spyOn(producer.scheduler, 'arrive').mockResolvedValue('direct');
    const add = jest
      .spyOn(Queue.prototype, 'add')
      .mockRejectedValueOnce(new Error('NOSCRIPT No matching script. Please use EVAL.'));
    const data = {
      requestId: 'req_noscript_1',
      model: 'm',
      keyId: `key_${'0a'.repeat(12)}`,
      priority: parkedPriorityOf('normal'),
    } as unknown as ChatJobData;
    await producer.enqueue('chat', data, 1);
    expect(add).toHaveBeenCalledTimes(2);
    expect(await producer.queueFor('chat', 'm').getJob('req_noscript_1')).toBeDefined();
    // Any other error is the caller's at once.
    add.mockRejectedValueOnce(new Error('Connection is closed.'));
    await expect(producer.enqueue('chat', { ...data, requestId: 'req_noscript_2' }, 1)).rejects.toThrow(
      'Connection is closed.',
    );
    add.mockRestore();
  });

  it('queues a job in its parked band while its model is saturated, and direct again once one finds room', async () => {
    jest.restoreAllMocks();
    // The band each job is in when the scheduler is given it: what a worker's fetch could take meanwhile.
    const bands: number[] = [];
    const arrive = producer.scheduler.arrive.bind(producer.scheduler);
    jest.spyOn(producer.scheduler, 'arrive').mockImplementation(async (kind, model, job) => {
      bands.push(Number(await redis.hget(`${namespace}:chat.${model}:${job.id}`, 'priority')));
      return arrive(kind, model, job);
    });
    let n = 0;
    const ids: string[] = [];
    const send = async (key: string) => {
      const requestId = `req_busy_${n++}`;
      ids.push(requestId);
      const data = { requestId, model: 'busy', keyId: key, priority: parkedPriorityOf('normal') };
      await producer.enqueue('chat', data as unknown as ChatJobData, 1);
    };
    const { direct, parked } = SCHEDULING_BANDS.normal;
    // One key past the backlog is alone (direct); a second key's job is parked: the model is saturated.
    for (let i = 0; i < UNSATURATED_BACKLOG + 2; i++) await send('key_a');
    await send('key_b');
    await send('key_a');
    expect(bands).toEqual([...Array<number>(UNSATURATED_BACKLOG + 3).fill(direct), parked]);
    // The queue drains; the next job is still queued parked, finds room, and the one after it is direct.
    for (const id of ids) await producer.removeWaiting('chat', 'busy', id);
    await send('key_c');
    await send('key_c');
    expect(bands.slice(-2)).toEqual([parked, direct]);
  });
});
