import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { queueNameFor } from '@mgw/contracts';
import { clusterLayout } from '../limits/cluster-layout.fixture';
import { Limiter, type AdmissionDecision, type Ticket } from '../limits/limiter';
import type { Principal } from '../principal';
import type { TeamLimits } from '../teams/team.record';
import { UsageRecorder } from '../usage/usage.recorder';
import type { BudgetLimits } from './budget';

/**
 * Budgets by reservation: exact under concurrent admissions, settled to the real cost, rolled over by date —
 * settled with what the job says its admission reserved, and (a job of an older gateway) without.
 */
describe.each([
  ['one node', false, 'the job carries its reservation', true],
  ['a Cluster layout (one step per slot)', true, 'the job carries its reservation', true],
  ['one node', false, 'the settlement reads the reservation', false],
  ['a Cluster layout (one step per slot)', true, 'the settlement reads the reservation', false],
])('budgets (real Redis, %s, %s)', (_layout, cluster, _settlement, fromJob) => {
  const namespace = `unit-budgets-${randomBytes(5).toString('hex')}`;
  const T0 = Date.UTC(2026, 10, 15, 12);
  let plain: Redis;
  let limiter: Limiter;
  let recorder: UsageRecorder;
  let seen: string[][];
  let seq = 0;

  const queueOf = (model: string) => {
    const name = `${namespace}:${queueNameFor('chat', model, cluster ? 'cluster' : 'node')}`;
    return { wait: `${name}:wait`, prioritized: `${name}:prioritized` };
  };

  const budget = (limits: Partial<BudgetLimits>): BudgetLimits => ({
    currency: 'USD',
    spend: null,
    tokens: null,
    period: 'month',
    softThreshold: 0.8,
    ...limits,
  });

  function team(of: BudgetLimits | null): TeamLimits {
    const id = `team_${randomBytes(12).toString('hex')}`;
    return { id, rpm: null, tpm: null, maxConcurrent: null, weight: 1, budget: of };
  }

  function key(of: TeamLimits | null, own: BudgetLimits | null = null): Principal {
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
      team: of,
      budget: own,
    };
  }

  function admit(
    who: Principal,
    now: number,
    maxCost: number,
    tokens = 0,
    holdMs?: number,
  ): Promise<AdmissionDecision> {
    return limiter.admit(
      {
        principal: who,
        kind: 'chat',
        model: 'm',
        requestId: `req_${String(++seq).padStart(8, '0')}`,
        tokenEstimate: tokens,
        maxQueueDepth: 0,
        queue: queueOf('m'),
        budget: holdMs === undefined ? { maxCost } : { maxCost, holdMs },
      },
      now,
    );
  }

  function ticketOf(decision: AdmissionDecision): Ticket {
    if (!decision.admitted) throw new Error(`expected admission, got ${decision.reason}`);
    return decision.ticket;
  }

  /** The worker's settlement of a ticket's job: its real tokens and cost. */
  function settle(ticket: Ticket, cost: number, tokens = 0): Promise<boolean> {
    return recorder.record(
      {
        requestId: ticket.requestId,
        model: ticket.model,
        keyId: ticket.keyId,
        ...(ticket.teamId === undefined ? {} : { teamId: ticket.teamId }),
        budgeted: ticket.budgeted === true,
        teamBudgeted: ticket.teamBudgeted === true,
        ...(fromJob && ticket.reservedCost !== undefined
          ? { reservedCost: ticket.reservedCost, reservedTokens: ticket.reservedTokens }
          : {}),
      },
      { promptTokens: tokens, completionTokens: 0, images: 0, cost },
    );
  }

  beforeAll(async () => {
    plain = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
    await plain.connect();
    seen = [];
    const redis = clusterLayout(plain, seen, cluster);
    limiter = new Limiter(redis, namespace, 5000);
    recorder = new UsageRecorder(redis, namespace, 'chat');
  });

  afterAll(async () => {
    const keys = await plain.keys(`${namespace}:*`);
    if (keys.length > 0) await plain.del(...keys);
    await plain.quit();
  });

  it("never admits past a team's budget under concurrent admissions, and its spend is the sum of the real costs", async () => {
    const shared = team(budget({ spend: 1_000_000 }));
    const keys = Array.from({ length: 8 }, () => key(shared));
    const decisions = await Promise.all(
      Array.from({ length: 100 }, (_, i) => admit(keys[i % 8]!, T0, 30_000)),
    );
    const admitted = decisions.filter((d) => d.admitted).map(ticketOf);
    // 33 reservations of 30 000 fit in 1 000 000; the 34th would pass it.
    expect(admitted).toHaveLength(33);
    const refused = decisions.find((d) => !d.admitted);
    expect(refused).toMatchObject({ reason: 'team_budget' });
    // Settled below their reservations: the difference is released, and a repeat counts nothing.
    const costs = admitted.map((_, i) => 10_000 + i * 7);
    await Promise.all(admitted.map((ticket, i) => settle(ticket, costs[i]!)));
    await Promise.all(admitted.map((ticket, i) => settle(ticket, costs[i]!)));
    const spent = costs.reduce((a, b) => a + b, 0);
    const hash = await plain.hgetall(limiterNames(shared.id, true));
    expect(Number(hash.spent)).toBe(spent);
    expect(Object.keys(hash).filter((field) => field.startsWith('r:'))).toEqual([]);
    // What is left admits again, exactly: floor((1 000 000 − spent) / 30 000) more.
    const more = await Promise.all(Array.from({ length: 40 }, (_, i) => admit(keys[i % 8]!, T0, 30_000)));
    expect(more.filter((d) => d.admitted)).toHaveLength(Math.floor((1_000_000 - spent) / 30_000));
  });

  it("holds a key's own budget and its team's, both, and counts tokens against a token limit", async () => {
    const shared = team(budget({ tokens: 1000 }));
    const own = key(shared, budget({ spend: 100, period: 'day' }));
    const first = ticketOf(await admit(own, T0, 60, 400));
    expect((await admit(own, T0, 60, 400)) as { reason?: string }).toMatchObject({ reason: 'budget' });
    await settle(first, 30, 300);
    const second = ticketOf(await admit(own, T0, 60, 600));
    expect(second.teamBudgeted).toBe(true);
    // The team has 1000 − 300 − 600 = 100 tokens left; its refusal says so.
    const other = key(shared);
    const refused = await admit(other, T0, 0, 101);
    expect(refused).toMatchObject({ admitted: false, reason: 'team_budget' });
    expect(refused.state.budgets).toEqual([
      expect.objectContaining({ holder: 'team', spent: 90, tokensUsed: 900 }),
    ]);
  });

  it('takes a reservation back when its job never reaches the queue', async () => {
    const own = key(null, budget({ spend: 100 }));
    const ticket = ticketOf(await admit(own, T0, 100));
    expect(await admit(own, T0, 1)).toMatchObject({ admitted: false, reason: 'budget' });
    await limiter.rollback(ticket);
    ticketOf(await admit(own, T0, 100));
  });

  it('sweeps a reservation no job will settle (past its deadline) before refusing, never a live one', async () => {
    const own = key(null, budget({ spend: 100 }));
    ticketOf(await admit(own, T0, 60, 0, 10_000)); // its job is lost: never settled
    const live = ticketOf(await admit(own, T0 + 9_000, 40, 0, 10_000));
    expect(await admit(own, T0 + 9_500, 1)).toMatchObject({ admitted: false, reason: 'budget' });
    // Past the first one's hold it is swept; the live one still counts.
    const after = await admit(own, T0 + 10_001, 60);
    expect(after).toMatchObject({ admitted: true });
    expect(after.state.budgets![0]).toMatchObject({ spent: 100 });
    await settle(live, 40);
    expect(Number(await plain.hget(limiterNames(own.keyId, false), 'spent'))).toBe(100);
  });

  it('rolls a monthly budget over at 00:00 UTC of the first', async () => {
    const own = key(null, budget({ spend: 100, period: 'month' }));
    const lastDay = Date.UTC(2026, 10, 30, 23, 59, 59);
    const ticket = ticketOf(await admit(own, lastDay, 100));
    await settle(ticket, 100);
    const refused = await admit(own, lastDay + 500, 1);
    expect(refused).toMatchObject({ admitted: false, reason: 'budget' });
    expect(refused.state.budgets![0]).toMatchObject({ spent: 100, resetMs: 500 });
    const next = await admit(own, Date.UTC(2026, 11, 1), 100);
    expect(next).toMatchObject({ admitted: true });
    expect(next.state.budgets![0]).toMatchObject({ spent: 100 });
  });

  it("settles nothing in the new period for a request admitted in the previous one, and a ticket's once", async () => {
    const own = key(null, budget({ spend: 1000, tokens: 1000, period: 'month' }));
    const lastDay = Date.UTC(2026, 10, 30, 23, 59, 59);
    const old = ticketOf(await admit(own, lastDay, 100, 50));
    expect(old).toMatchObject({ reservedCost: 100, reservedTokens: 50 });
    const current = ticketOf(await admit(own, Date.UTC(2026, 11, 1), 200, 80));
    await settle(old, 90, 40); // its reservation went with November's hash
    await settle(current, 150, 60);
    await settle(current, 150, 60); // a repeat (a retried report) counts nothing
    const { layout, ...hash } = await plain.hgetall(limiterNames(own.keyId, false));
    expect(hash).toEqual({ period: '2026-12', spent: '150', tokens: '60' });
    expect(layout).toContain('r:<request id>');
  });

  it("keeps a budget's hash a table, so no reservation's write scans the others in flight", async () => {
    const own = key(null, budget({ spend: 1_000_000, period: 'month' }));
    const tickets = [];
    for (let i = 0; i < 3; i++) tickets.push(ticketOf(await admit(own, T0, 10)));
    const hash = limiterNames(own.keyId, false);
    expect(await plain.object('ENCODING', hash)).toBe('hashtable');
    for (const ticket of tickets) await settle(ticket, 5);
    expect(await plain.object('ENCODING', hash)).toBe('hashtable');
    expect(Number(await plain.hget(hash, 'spent'))).toBe(15);
  });

  it('reads no budget hash for a key (and team) without a budget', async () => {
    seen.length = 0;
    const plainKey = key(team(null));
    ticketOf(await admit(plainKey, T0, 5000, 10));
    const ticket = ticketOf(await admit(plainKey, T0, 5000, 10));
    await settle(ticket, 5000, 10);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.flat().filter((name) => name.endsWith(':budget'))).toEqual([]);
  });

  /** Where a holder's budget is kept (access.names). */
  function limiterNames(id: string, isTeam: boolean): string {
    const tag = cluster ? `{${id}}` : id;
    return isTeam ? `${namespace}:limits:team:${tag}:budget` : `${namespace}:limits:${tag}:budget`;
  }
});
