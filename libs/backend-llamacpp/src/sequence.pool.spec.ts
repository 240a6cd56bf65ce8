import { pickSlot, SequencePool } from './sequence.pool';

const never = new AbortController().signal;

/** `length` tokens counting up from `from`. */
const run = (from: number, length: number) => Array.from({ length }, (_, i) => from + i);
const SYSTEM = run(1000, 40);

describe('pickSlot', () => {
  it('takes the slot whose history shares the longest prefix with the prompt', () => {
    const prompt = [...SYSTEM, ...run(1, 30)];
    const free = [
      { history: [...SYSTEM, ...run(500, 10)], lastUsed: 1 },
      { history: [...SYSTEM, ...run(1, 20)], lastUsed: 5 },
      { history: [], lastUsed: 0 },
    ];
    expect(pickSlot(free, prompt)).toEqual({ at: 1, matched: SYSTEM.length + 20 });
  });

  it('among equal matches, takes the least recently used', () => {
    const prompt = [...SYSTEM, 7];
    const free = [
      { history: [...SYSTEM, 8], lastUsed: 9 },
      { history: [...SYSTEM, 9], lastUsed: 3 },
    ];
    expect(pickSlot(free, prompt)).toEqual({ at: 1, matched: SYSTEM.length });
  });

  it('takes an empty slot rather than erase more of a history than the match saves', () => {
    const opening = run(1, 20);
    const prompt = [...opening, 5000];
    const free = [
      { history: [...opening, ...run(6000, 21)], lastUsed: 1 },
      { history: [], lastUsed: 7 },
    ];
    expect(pickSlot(free, prompt)).toEqual({ at: 1, matched: 0 });
  });

  it('takes over a history mostly made of a prompt it shares (a long system prompt)', () => {
    const prompt = [...SYSTEM, ...run(500, 10)];
    const free = [
      { history: [], lastUsed: 0 },
      { history: [...SYSTEM, ...run(1, 30)], lastUsed: 4 },
    ];
    expect(pickSlot(free, prompt)).toEqual({ at: 1, matched: SYSTEM.length });
  });

  it('with no match worth it and no empty slot, takes the least recently used and reports what it shares', () => {
    const prompt = [1, 2, 3];
    const free = [
      { history: [1, 9, 9], lastUsed: 8 },
      { history: [1, 7, 7], lastUsed: 2 },
      { history: [4], lastUsed: 5 },
    ];
    expect(pickSlot(free, prompt)).toEqual({ at: 1, matched: 1 });
  });
});

describe('SequencePool', () => {
  it('hands out its slots, then queues in arrival order', async () => {
    const pool = new SequencePool<string>(2);
    const first = await pool.acquire([], never);
    await pool.acquire([], never);
    expect(pool.available).toBe(0);

    const order: string[] = [];
    const third = pool.acquire([], never).then((lease) => (order.push('third'), lease));
    const fourth = pool.acquire([], never).then((lease) => (order.push('fourth'), lease));
    expect(pool.waiting).toBe(2);

    first.release(null);
    const leaseThird = await third;
    expect(order).toEqual(['third']);
    leaseThird.release(null);
    await fourth;
    expect(order).toEqual(['third', 'fourth']);
    expect(pool.waiting).toBe(0);
  });

  it('gives a kept sequence to the prompt that continues its history', async () => {
    const pool = new SequencePool<string>(3);
    const conversationA = [...SYSTEM, ...run(1, 20)];
    const conversationB = [...SYSTEM, ...run(100, 20)];
    const a = await pool.acquire(conversationA, never);
    const b = await pool.acquire(conversationB, never);
    expect([a.sequence, a.matched, b.sequence, b.matched]).toEqual([null, 0, null, 0]);
    a.release({ sequence: 'A', history: [...conversationA, 7, 8] });
    b.release({ sequence: 'B', history: [...conversationB, 9] });

    // B's next turn: its history plus an answer and a new question.
    const next = await pool.acquire([...conversationB, 9, 10, 11], never);
    expect(next.sequence).toBe('B');
    expect(next.matched).toBe(conversationB.length + 1);
    // A new conversation with an unrelated opening takes the never-used slot, evicting nobody.
    const other = await pool.acquire(run(9000, 50), never);
    expect(other.sequence).toBeNull();
    // A's next turn still finds A.
    const again = await pool.acquire([...conversationA, 7, 8, 12], never);
    expect(again.sequence).toBe('A');
    expect(again.matched).toBe(conversationA.length + 2);
  });

  it('forgets a slot released without a sequence, and drains the kept ones', async () => {
    const pool = new SequencePool<string>(2);
    const prompt = run(1, 40);
    const first = await pool.acquire(prompt, never);
    const second = await pool.acquire(prompt, never);
    first.release(null);
    second.release({ sequence: 'kept', history: prompt });
    const lease = await pool.acquire(prompt, never);
    expect([lease.sequence, lease.matched]).toEqual(['kept', prompt.length]);
    lease.release({ sequence: 'kept', history: prompt });
    expect(pool.drain()).toEqual(['kept']);
    expect((await pool.acquire(prompt, never)).sequence).toBeNull();
  });

  it('hands a released slot with its sequence to the next waiter', async () => {
    const pool = new SequencePool<string>(1);
    const prompt = run(1, 40);
    const lease = await pool.acquire(prompt, never);
    const waiting = pool.acquire([...prompt, 41], never);
    lease.release({ sequence: 'S', history: prompt });
    const next = await waiting;
    expect([next.sequence, next.matched]).toEqual(['S', prompt.length]);
  });

  it('ignores a second release of the same slot', async () => {
    const pool = new SequencePool<string>(1);
    const lease = await pool.acquire([], never);
    lease.release(null);
    lease.release(null);
    expect(pool.available).toBe(1);
  });

  it('drops a waiter whose signal aborts, with the abort reason, and keeps the line moving', async () => {
    const pool = new SequencePool<string>(1);
    const lease = await pool.acquire([], never);
    const controller = new AbortController();
    const waiting = pool.acquire([], controller.signal);
    const next = pool.acquire([], never);
    const reason = new Error('client left');
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(pool.waiting).toBe(1);
    lease.release(null);
    (await next).release(null);
    expect(pool.available).toBe(1);
  });

  it('refuses at once when the signal is already aborted', async () => {
    const pool = new SequencePool<string>(1);
    await expect(pool.acquire([], AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
    expect(pool.available).toBe(1);
  });
});
