import type { Limiter, Ticket } from '@mgw/access';
import type { SlotKeeper } from '@mgw/redis';
import { AdmissionHold } from './admission-hold';

const ticket: Ticket = {
  id: 't1',
  keyId: 'key_1',
  requestId: 'req_1',
  kind: 'chat',
  model: 'sim-chat',
  leased: true,
};

function holdWithFakes() {
  const calls: string[] = [];
  const limiter = {
    enqueued: jest.fn(() => Promise.resolve(void calls.push('enqueued'))),
    release: jest.fn((_: Ticket, queued: boolean) =>
      Promise.resolve(void calls.push(`release(queued=${queued})`)),
    ),
    rollback: jest.fn(() => Promise.resolve(void calls.push('rollback'))),
  };
  const leases = {
    track: jest.fn(() => calls.push('track')),
    untrack: jest.fn(() => calls.push('untrack')),
  };
  const hold = new AdmissionHold(
    ticket,
    limiter as unknown as Limiter,
    leases as unknown as SlotKeeper,
    (work) => void work.catch(() => undefined),
  );
  return { hold, calls };
}

describe('AdmissionHold', () => {
  it('keeps the lease alive from admission until the release, and releases once', () => {
    const { hold, calls } = holdWithFakes();
    expect(calls).toEqual(['track']);
    hold.enqueued();
    hold.release();
    hold.release();
    expect(hold.ended).toBe(true);
    expect(calls).toEqual(['track', 'enqueued', 'untrack', 'release(queued=true)']);
  });

  it('released before its job was queued, the admission stops counting and a late enqueue changes nothing', () => {
    const { hold, calls } = holdWithFakes();
    hold.release();
    hold.enqueued();
    hold.release();
    expect(calls).toEqual(['track', 'untrack', 'release(queued=false)']);
  });

  it('a failed enqueue rolls back once, also after a release, and nothing is released after it', () => {
    const { hold, calls } = holdWithFakes();
    hold.release();
    hold.rollback();
    hold.rollback();
    hold.release();
    expect(calls).toEqual(['track', 'untrack', 'release(queued=false)', 'untrack', 'rollback']);
  });

  it('a request without a concurrency limit holds no lease to keep alive', () => {
    const calls: string[] = [];
    const leases = { track: () => calls.push('track'), untrack: () => calls.push('untrack') };
    new AdmissionHold(
      { ...ticket, leased: false },
      {} as Limiter,
      leases as unknown as SlotKeeper,
      () => undefined,
    );
    expect(calls).toEqual([]);
  });
});
