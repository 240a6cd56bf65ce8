import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { schedulerNamesFor } from '@mgw/contracts';
import type { Principal } from '../principal';
import { UsageReader } from '../usage/usage.reader';
import { UsageRecorder } from '../usage/usage.recorder';
import { Limiter, type AdmissionDecision, type AdmissionRequest, type Ticket } from './limiter';

/** The Lua arithmetic against a real Redis, at chosen instants (explicit `now`), in a namespace of its own. */
describe('Limiter (real Redis)', () => {
  const namespace = `unit-limiter-${randomBytes(5).toString('hex')}`;
  const LEASE_MS = 5000;
  const T0 = 1_700_000_000_000;
  let redis: Redis;
  let limiter: Limiter;
  let recorder: UsageRecorder;
  let seq = 0;

  const queue = { wait: `${namespace}:q:wait`, prioritized: `${namespace}:q:prioritized` };

  function principal(limits: Partial<Principal>): Principal {
    return {
      keyId: `key_${randomBytes(12).toString('hex')}`,
      name: 'test',
      bootstrap: false,
      models: null,
      rpm: null,
      tpm: null,
      maxConcurrent: null,
      priority: 'normal',
      weight: 1,
      ...limits,
    };
  }

  function admit(
    who: Principal,
    now: number,
    extra: Partial<AdmissionRequest> = {},
  ): Promise<AdmissionDecision> {
    return limiter.admit(
      {
        principal: who,
        kind: 'chat',
        model: 'm',
        requestId: `req_${String(++seq).padStart(8, '0')}`,
        tokenEstimate: 0,
        maxQueueDepth: 0,
        queue,
        ...extra,
      },
      now,
    );
  }

  function ticketOf(decision: AdmissionDecision): Ticket {
    if (!decision.admitted) throw new Error(`expected admission, got ${decision.reason}`);
    return decision.ticket;
  }

  function refusal(decision: AdmissionDecision) {
    if (decision.admitted) throw new Error('expected a refusal');
    return decision;
  }

  beforeAll(async () => {
    redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    limiter = new Limiter(redis, namespace, LEASE_MS);
    recorder = new UsageRecorder(redis, namespace, 'chat');
  });

  afterAll(async () => {
    const keys = await redis.keys(`${namespace}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  describe('the key alone (before stored reads, stored reads)', () => {
    it('checks the limits without counting: as often as asked, the window stays as it was', async () => {
      const who = principal({ rpm: 2 });
      ticketOf(await admit(who, T0));
      for (let i = 0; i < 5; i++) expect((await limiter.checkKey(who, T0 + 10)).allowed).toBe(true);
      ticketOf(await admit(who, T0 + 20));
      const full = await limiter.checkKey(who, T0 + 30);
      expect(full).toMatchObject({ allowed: false, reason: 'requests', retryAfterMs: 60_000 - 30 });
      expect(full.state).toMatchObject({ rpm: 2, requestsUsed: 2 });
    });

    it('refuses a check at max_concurrent; tokens are weighed by the admission, with its estimate', async () => {
      const busy = principal({ maxConcurrent: 1 });
      ticketOf(await admit(busy, T0));
      expect(await limiter.checkKey(busy, T0 + 10)).toMatchObject({ allowed: false, reason: 'concurrency' });
      const spent = principal({ tpm: 100 });
      ticketOf(await admit(spent, T0, { tokenEstimate: 100 }));
      expect((await limiter.checkKey(spent, T0 + 10)).allowed).toBe(true);
      expect(await admit(spent, T0 + 20, { tokenEstimate: 1 })).toMatchObject({
        admitted: false,
        reason: 'tokens',
      });
    });

    it('counts a stored read against rpm alone: the next admission sees it, concurrency is not held', async () => {
      const who = principal({ rpm: 3, maxConcurrent: 1 });
      const reads = [await limiter.countRequest(who, T0), await limiter.countRequest(who, T0 + 1)];
      expect(reads.map((read) => [read.allowed, read.state.requestsUsed])).toEqual([
        [true, 1],
        [true, 2],
      ]);
      ticketOf(await admit(who, T0 + 2));
      const refused = await limiter.countRequest(who, T0 + 3);
      expect(refused).toMatchObject({ allowed: false, reason: 'requests', retryAfterMs: 60_000 - 3 });
      expect(refused.state).toMatchObject({ rpm: 3, requestsUsed: 3 });
    });
  });

  describe('requests per minute (sliding window)', () => {
    it('admits exactly the limit, then says when the oldest admission leaves the window', async () => {
      const who = principal({ rpm: 3 });
      const decisions = [await admit(who, T0), await admit(who, T0 + 1000), await admit(who, T0 + 2000)];
      expect(decisions.map((d) => d.admitted)).toEqual([true, true, true]);
      expect(decisions.map((d) => d.state.requestsUsed)).toEqual([1, 2, 3]);
      expect(decisions[2]!.state.requestsResetMs).toBe(60_000);

      const refused = refusal(await admit(who, T0 + 5000));
      expect(refused.reason).toBe('requests');
      expect(refused.retryAfterMs).toBe(55_000);
      expect(refused.state.requestsUsed).toBe(3);
      // A refusal consumes nothing: still refused, with the same count, just before the first expires.
      const still = refusal(await admit(who, T0 + 59_999));
      expect(still.state.requestsUsed).toBe(3);
      expect(still.retryAfterMs).toBe(1);

      const later = await admit(who, T0 + 60_000);
      expect(later.admitted).toBe(true);
      expect(later.state.requestsUsed).toBe(3);
    });

    it('counts each key on its own', async () => {
      const one = principal({ rpm: 1 });
      const two = principal({ rpm: 1 });
      expect((await admit(one, T0)).admitted).toBe(true);
      expect((await admit(two, T0)).admitted).toBe(true);
      expect((await admit(one, T0)).admitted).toBe(false);
    });

    it('is exact under concurrent admissions', async () => {
      const who = principal({ rpm: 25 });
      const decisions = await Promise.all(Array.from({ length: 60 }, () => admit(who, T0)));
      expect(decisions.filter((d) => d.admitted)).toHaveLength(25);
    });
  });

  describe('tokens per minute (reserve, then reconcile)', () => {
    it('reserves the estimate and refuses what would exceed the limit until its bucket expires', async () => {
      const who = principal({ tpm: 100 });
      const first = await admit(who, T0, { tokenEstimate: 60 });
      expect(first.admitted).toBe(true);
      expect(first.state.tokensUsed).toBe(60);
      expect(first.state.tokensResetMs).toBe(60_000);

      const refused = refusal(await admit(who, T0 + 1500, { tokenEstimate: 50 }));
      expect(refused.reason).toBe('tokens');
      // The 60 reserved in second T0/1000 leave the window 60 s after that second began.
      expect(refused.retryAfterMs).toBe(58_500);
      expect(refused.state.tokensUsed).toBe(60);

      expect(refusal(await admit(who, T0 + 1500, { tokenEstimate: 101 })).reason).toBe('too_large');
      expect((await admit(who, T0 + 60_000, { tokenEstimate: 50 })).admitted).toBe(true);
    });

    it('replaces the estimate by the actual usage when the worker records it, once', async () => {
      const who = principal({ tpm: 100 });
      const requestId = 'req_reconcile1';
      expect((await admit(who, T0, { tokenEstimate: 80, requestId })).admitted).toBe(true);
      expect(refusal(await admit(who, T0 + 100, { tokenEstimate: 30 })).state.tokensUsed).toBe(80);

      const subject = { requestId, model: 'm', keyId: who.keyId };
      expect(
        await recorder.record(subject, { promptTokens: 7, completionTokens: 13, images: 0 }, T0 + 200),
      ).toBe(true);
      // Recorded twice (a re-run job): counted once.
      expect(
        await recorder.record(subject, { promptTokens: 7, completionTokens: 13, images: 0 }, T0 + 300),
      ).toBe(false);
      const after = await admit(who, T0 + 400, { tokenEstimate: 30 });
      expect(after.admitted).toBe(true);
      expect(after.state.tokensUsed).toBe(20 + 30);
    });

    it('can reconcile upwards (a longer answer than estimated)', async () => {
      const who = principal({ tpm: 1000 });
      const requestId = 'req_reconcile2';
      await admit(who, T0, { tokenEstimate: 10, requestId });
      await recorder.record(
        { requestId, model: 'm', keyId: who.keyId },
        { promptTokens: 5, completionTokens: 95, images: 0 },
        T0,
      );
      expect((await admit(who, T0 + 10, { tokenEstimate: 1 })).state.tokensUsed).toBe(101);
    });

    it('leaves a bucket that already left the window alone', async () => {
      const who = principal({ tpm: 1000 });
      const requestId = 'req_reconcile3';
      await admit(who, T0, { tokenEstimate: 500, requestId });
      await admit(who, T0 + 61_000, { tokenEstimate: 1 }); // drops the old bucket
      await recorder.record(
        { requestId, model: 'm', keyId: who.keyId },
        { promptTokens: 1, completionTokens: 1, images: 0 },
        T0 + 61_500,
      );
      expect((await admit(who, T0 + 62_000, { tokenEstimate: 1 })).state.tokensUsed).toBe(2);
    });
  });

  describe('max concurrent (leases)', () => {
    it('holds a slot until released', async () => {
      const who = principal({ maxConcurrent: 2 });
      const a = ticketOf(await admit(who, T0));
      ticketOf(await admit(who, T0));
      expect(refusal(await admit(who, T0)).reason).toBe('concurrency');
      await limiter.release(a, true);
      expect((await admit(who, T0 + 1)).admitted).toBe(true);
    });

    it('lets a lease expire unless it is refreshed', async () => {
      const who = principal({ maxConcurrent: 1 });
      const held = ticketOf(await admit(who, T0));
      expect((await admit(who, T0 + LEASE_MS - 1)).admitted).toBe(false);
      await limiter.refresh(who.keyId, [held.id], T0 + LEASE_MS - 1);
      expect((await admit(who, T0 + LEASE_MS + 1000)).admitted).toBe(false);
      // No refresh since: it expires one lease after the last one.
      expect((await admit(who, T0 + 2 * LEASE_MS - 1)).admitted).toBe(true);
    });

    it('does not bring back a released lease on refresh', async () => {
      const who = principal({ maxConcurrent: 1 });
      const held = ticketOf(await admit(who, T0));
      await limiter.release(held, true);
      await limiter.refresh(who.keyId, [held.id], T0 + 10);
      expect((await admit(who, T0 + 20)).admitted).toBe(true);
    });
  });

  it('rolls an admission back entirely when its job never reached the queue', async () => {
    const who = principal({ rpm: 1, tpm: 100, maxConcurrent: 1 });
    const ticket = ticketOf(await admit(who, T0, { tokenEstimate: 90, requestId: 'req_rollback1' }));
    await limiter.rollback(ticket);
    const again = await admit(who, T0 + 1, { tokenEstimate: 90 });
    expect(again.admitted).toBe(true);
    expect(again.state).toMatchObject({ requestsUsed: 1, tokensUsed: 90 });
  });

  describe('queue depth', () => {
    it('refuses at the bound, counting waiting, prioritised and admitting jobs, and reports the service rate', async () => {
      const who = principal({});
      const model = `depth-${seq}`;
      await redis.rpush(queue.wait, 'job-1');
      const first = ticketOf(await admit(who, T0, { model, maxQueueDepth: 3 }));
      expect(first.model).toBe(model);
      await redis.zadd(queue.prioritized, 1, 'job-2');
      const refused = refusal(await admit(who, T0 + 1, { model, maxQueueDepth: 3 }));
      // One tenant fills the room alone: no share to claim.
      expect(refused).toMatchObject({ reason: 'queue_full', depth: 3, servedLastMinute: 0 });

      // The admitted job landed in the queue: no longer counted twice.
      await limiter.enqueued(first);
      await redis.rpush(queue.wait, first.requestId);
      expect(refusal(await admit(who, T0 + 2, { model, maxQueueDepth: 3 })).depth).toBe(3);
      await redis.del(queue.wait, queue.prioritized);

      for (let i = 0; i < 4; i++) {
        await recorder.record(
          { requestId: `req_served${i}`, model },
          { promptTokens: 1, completionTokens: 1, images: 0 },
          T0 + 3 + i,
        );
      }
      await redis.rpush(queue.wait, 'a', 'b', 'c');
      expect(refusal(await admit(who, T0 + 10, { model, maxQueueDepth: 3 })).servedLastMinute).toBe(4);
      await redis.del(queue.wait);
    });

    it('stops counting an admission released before its job was queued (its client left)', async () => {
      const who = principal({});
      const model = `left-${seq}`;
      const first = ticketOf(await admit(who, T0, { model, maxQueueDepth: 1 }));
      expect((await admit(who, T0 + 1, { model, maxQueueDepth: 1 })).admitted).toBe(false);
      await limiter.release(first, false);
      expect((await admit(who, T0 + 2, { model, maxQueueDepth: 1 })).admitted).toBe(true);
    });

    it('shares a full room: admits a key under its share, refuses one at or over it, up to one job per waiting key', async () => {
      const model = `room-${seq}`;
      const names = schedulerNamesFor(namespace, 'chat', model, 'node');
      const holder = principal({});
      const visitor = principal({});
      const heavy = principal({ weight: 3 });
      // The holder's 4 parked jobs fill the room of 4.
      await redis.zadd(queue.prioritized, 1, 'r1', 2, 'r2', 3, 'r3', 4, 'r4');
      await redis.zadd(names.waiting, 4, holder.keyId);
      await redis.hset(names.tenants, 'wsum', 1, `w:${holder.keyId}`, 1);
      const room = { model, maxQueueDepth: 4 };
      try {
        // Alone, it has no share to claim against anyone: the room is full.
        expect(refusal(await admit(holder, T0, room)).reason).toBe('queue_full');
        // A newcomer's share is 4 * 1/2: admitted past the bound.
        expect((await admit(visitor, T0 + 1, room)).admitted).toBe(true);
        // Holding 2 of 4 with one other key waiting is its whole share.
        await redis.zadd(names.waiting, 2, visitor.keyId);
        await redis.hset(names.tenants, 'wsum', 2, `w:${visitor.keyId}`, 1);
        expect(refusal(await admit(visitor, T0 + 2, room)).reason).toBe('over_share');
        expect(refusal(await admit(holder, T0 + 2, room)).reason).toBe('over_share');
        // A weight of 3 among 1 + 1 + 3 is a share of 2.4: under it with 2.
        await redis.zadd(names.waiting, 2, heavy.keyId);
        await redis.hset(names.tenants, 'wsum', 5, `w:${heavy.keyId}`, 3);
        expect((await admit(heavy, T0 + 3, room)).admitted).toBe(true);
        // 4 parked and 2 admitted: the room plus one job per waiting key (4 + 3) is the most it ever holds.
        await redis.zadd(queue.prioritized, 5, 'r5');
        expect(refusal(await admit(heavy, T0 + 4, room)).reason).toBe('queue_full');
      } finally {
        await redis.del(queue.prioritized, names.waiting, names.tenants);
      }
    });

    it('counts a solo tenant, whose jobs fill the room unparked, as a waiting key holding the room', async () => {
      const model = `solo-${seq}`;
      const names = schedulerNamesFor(namespace, 'chat', model, 'node');
      const holder = principal({});
      const visitor = principal({});
      // The holder alone filled the room of 4 with direct jobs: nothing is parked, it is the solo tenant.
      await redis.zadd(queue.prioritized, 1, 'r1', 2, 'r2', 3, 'r3', 4, 'r4');
      await redis.hset(names.tenants, 'solo', `normal|${holder.keyId}|1|20|22`);
      const room = { model, maxQueueDepth: 4 };
      try {
        expect(refusal(await admit(holder, T0, room)).reason).toBe('queue_full');
        // A newcomer is under its share (4 * 1/2) of a room it shares with the solo tenant: admitted.
        expect((await admit(visitor, T0 + 1, room)).admitted).toBe(true);
      } finally {
        await redis.del(queue.prioritized, names.waiting, names.tenants);
      }
    });

    it('forgets an admission whose job never arrived after a while', async () => {
      const who = principal({});
      const model = `stale-${seq}`;
      ticketOf(await admit(who, T0, { model, maxQueueDepth: 1 }));
      expect((await admit(who, T0 + 1, { model, maxQueueDepth: 1 })).admitted).toBe(false);
      expect((await admit(who, T0 + 10_001, { model, maxQueueDepth: 1 })).admitted).toBe(true);
    });
  });

  describe('usage', () => {
    const NO_USAGE = { requests: 0, prompt_tokens: 0, completion_tokens: 0, images: 0, cost: 0 };

    it('adds exactly every recorded request, per model and day, under concurrency', async () => {
      const keyId = `key_${randomBytes(12).toString('hex')}`;
      const day = Date.UTC(2025, 0, 15, 12);
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          recorder.record(
            { requestId: `req_usage${keyId.slice(4, 12)}${i}`, model: i % 2 ? 'odd' : 'even', keyId },
            { promptTokens: i, completionTokens: 2 * i, images: 0 },
            day + i,
          ),
        ),
      );
      const report = await new UsageReader(redis, namespace).report({
        key: keyId,
        from: '2025-01-14',
        to: '2025-01-16',
      });
      const sum = (odd: boolean) =>
        Array.from({ length: 50 }, (_, i) => i).filter((i) => (i % 2 === 1) === odd);
      expect(report.totals).toEqual({
        requests: 50,
        prompt_tokens: 1225,
        completion_tokens: 2450,
        images: 0,
        cost: 0,
        batch: NO_USAGE,
      });
      expect(report.data).toEqual([
        {
          key_id: keyId,
          team_id: null,
          date: '2025-01-15',
          model: 'even',
          requests: 25,
          prompt_tokens: sum(false).reduce((a, b) => a + b, 0),
          completion_tokens: 2 * sum(false).reduce((a, b) => a + b, 0),
          images: 0,
          cost: 0,
          batch: NO_USAGE,
        },
        {
          key_id: keyId,
          team_id: null,
          date: '2025-01-15',
          model: 'odd',
          requests: 25,
          prompt_tokens: sum(true).reduce((a, b) => a + b, 0),
          completion_tokens: 2 * sum(true).reduce((a, b) => a + b, 0),
          images: 0,
          cost: 0,
          batch: NO_USAGE,
        },
      ]);
    });

    it("counts a batch's line once under its line, whatever its request ids, and as batch usage", async () => {
      const keyId = `key_${randomBytes(12).toString('hex')}`;
      const batchLine = `batch_${randomBytes(12).toString('hex')}:${randomBytes(16).toString('hex')}`;
      const day = Date.UTC(2025, 0, 15, 12);
      const amounts = { promptTokens: 7, completionTokens: 11, images: 0 };
      // The line ran on a gateway that died, and again (a new request id) on the one that took its batch over.
      const first = await recorder.record(
        { requestId: 'batch_req_first1', model: 'm', keyId, batchLine },
        amounts,
        day,
      );
      const again = await recorder.record(
        { requestId: 'batch_req_again1', model: 'm', keyId, batchLine },
        amounts,
        day,
      );
      await recorder.record({ requestId: 'req_live_request1', model: 'm', keyId }, amounts, day);
      expect([first, again]).toEqual([true, false]);
      const report = await new UsageReader(redis, namespace).report({
        key: keyId,
        from: '2025-01-15',
        to: '2025-01-15',
      });
      const one = { requests: 1, prompt_tokens: 7, completion_tokens: 11, images: 0, cost: 0 };
      expect(report.data).toEqual([
        {
          key_id: keyId,
          team_id: null,
          date: '2025-01-15',
          model: 'm',
          requests: 2,
          prompt_tokens: 14,
          completion_tokens: 22,
          images: 0,
          cost: 0,
          batch: one,
        },
      ]);
      expect(report.totals).toEqual({
        requests: 2,
        prompt_tokens: 14,
        completion_tokens: 22,
        images: 0,
        cost: 0,
        batch: one,
      });
    });

    it('keeps each day under the team the key had, with its cost, grouped as asked', async () => {
      const keyId = `key_${randomBytes(12).toString('hex')}`;
      const teamA = `team_${randomBytes(12).toString('hex')}`;
      const teamB = `team_${randomBytes(12).toString('hex')}`;
      const day = Date.UTC(2025, 0, 15, 12);
      const record = (n: number, teamId: string | undefined, cost: number, batchLine?: string) =>
        recorder.record(
          { requestId: `req_team${keyId.slice(4, 14)}${n}`, model: 'm', keyId, teamId, batchLine },
          { promptTokens: 10, completionTokens: 5, images: 0, cost },
          day + n,
        );
      // Two requests in no team, one in team A (a batch line), then the key moves to team B for two more.
      await record(1, undefined, 1);
      await record(2, undefined, 2);
      await record(3, teamA, 1_000_003, `batch_${randomBytes(12).toString('hex')}:${'a'.repeat(32)}`);
      await record(4, teamB, 250_000);
      await record(5, teamB, 250_000);
      const reader = new UsageReader(redis, namespace);
      const range = { key: keyId, from: '2025-01-15', to: '2025-01-15' };
      const report = await reader.report(range, 'USD');
      expect(report).toMatchObject({ currency: 'USD', team: null, group_by: ['key', 'model', 'day'] });
      const counts = (requests: number, cost: number) => ({
        requests,
        prompt_tokens: 10 * requests,
        completion_tokens: 5 * requests,
        images: 0,
        cost,
      });
      const row = (team: string | null, requests: number, cost: number, batch = NO_USAGE) => ({
        key_id: keyId,
        team_id: team,
        date: '2025-01-15',
        model: 'm',
        ...counts(requests, cost),
        batch,
      });
      expect(report.data).toEqual(
        [row(teamA, 1, 1.000003, counts(1, 1.000003)), row(teamB, 2, 0.5), row(null, 2, 0.000003)].sort(
          (a, b) => (a.team_id ?? '').localeCompare(b.team_id ?? ''),
        ),
      );
      expect(report.totals).toEqual({ ...counts(5, 1.500006), batch: counts(1, 1.000003) });

      const byTeam = await reader.report({ ...range, team: teamB, group_by: 'team,day' }, 'USD');
      expect(byTeam.data).toEqual([{ ...row(teamB, 2, 0.5), key_id: null, model: null }]);
      const byModel = await reader.report({ ...range, group_by: 'model' }, 'USD');
      expect(byModel.data).toEqual([
        { ...row(null, 5, 1.500006, counts(1, 1.000003)), key_id: null, date: null },
      ]);
      await expect(reader.report({ group_by: 'key,week' })).rejects.toMatchObject({
        status: 400,
        param: 'group_by',
      });
      await expect(reader.report({ group_by: 'key,key' })).rejects.toMatchObject({ param: 'group_by' });
      await expect(reader.report({ team: 'nope' })).rejects.toMatchObject({ status: 400, param: 'team' });
    });

    it('refuses malformed ranges', async () => {
      const reader = new UsageReader(redis, namespace);
      await expect(reader.report({ from: '2025-02-30' })).rejects.toMatchObject({
        status: 400,
        param: 'from',
      });
      await expect(reader.report({ from: '2025-02-02', to: '2025-02-01' })).rejects.toMatchObject({
        status: 400,
      });
      await expect(reader.report({ from: '2023-01-01', to: '2025-01-01' })).rejects.toMatchObject({
        status: 400,
      });
      await expect(reader.report({ key: 'nope' })).rejects.toMatchObject({ status: 400, param: 'key' });
    });
  });
});
