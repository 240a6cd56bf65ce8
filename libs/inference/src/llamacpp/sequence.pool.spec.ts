import { SequencePool } from './sequence.pool';

const never = new AbortController().signal;

describe('SequencePool', () => {
  it('hands out its sequences, then queues in arrival order', async () => {
    const pool = new SequencePool(2);
    const first = await pool.acquire(never);
    await pool.acquire(never);
    expect(pool.available).toBe(0);

    const order: string[] = [];
    const third = pool.acquire(never).then((release) => (order.push('third'), release));
    const fourth = pool.acquire(never).then((release) => (order.push('fourth'), release));
    expect(pool.waiting).toBe(2);

    first();
    const releaseThird = await third;
    expect(order).toEqual(['third']);
    releaseThird();
    await fourth;
    expect(order).toEqual(['third', 'fourth']);
    expect(pool.waiting).toBe(0);
  });

  it('ignores a second release of the same sequence', async () => {
    const pool = new SequencePool(1);
    const release = await pool.acquire(never);
    release();
    release();
    expect(pool.available).toBe(1);
  });

  it('drops a waiter whose signal aborts, with the abort reason, and keeps the line moving', async () => {
    const pool = new SequencePool(1);
    const release = await pool.acquire(never);
    const controller = new AbortController();
    const waiting = pool.acquire(controller.signal);
    const next = pool.acquire(never);
    const reason = new Error('client left');
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(pool.waiting).toBe(1);
    release();
    const releaseNext = await next;
    releaseNext();
    expect(pool.available).toBe(1);
  });

  it('refuses at once when the signal is already aborted', async () => {
    const pool = new SequencePool(1);
    await expect(pool.acquire(AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
    expect(pool.available).toBe(1);
  });
});
