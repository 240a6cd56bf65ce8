import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { queueNameFor } from '@mgw/contracts';
import type { Principal } from '../principal';
import type { TeamLimits } from '../teams/team.record';
import { UsageReader } from '../usage/usage.reader';
import { UsageRecorder } from '../usage/usage.recorder';
import { clusterLayout } from './cluster-layout.fixture';
import { Limiter, type AdmissionDecision, type AdmissionRequest, type Ticket } from './limiter';

/** A team's limits hold for all its keys together, on top of each key's, on one node and split on a Cluster. */
describe.each([
  ['one node', false],
  ['a Cluster layout (one step per slot)', true],
])('team limits (real Redis, %s)', (_layout, cluster) => {
  const namespace = `unit-teams-${randomBytes(5).toString('hex')}`;
  const LEASE_MS = 5000;
  const T0 = 1_700_000_000_000;
  let plain: Redis;
  let redis: Redis;
  let limiter: Limiter;
  let recorder: UsageRecorder;
  let seq = 0;

  /** The model's BullMQ queue names, in its slot on a Cluster. */
  const queueOf = (model: string) => {
    const name = `${namespace}:${queueNameFor('chat', model, cluster ? 'cluster' : 'node')}`;
    return { wait: `${name}:wait`, prioritized: `${name}:prioritized` };
  };

  function team(limits: Partial<TeamLimits>): TeamLimits {
    return {
      id: `team_${randomBytes(12).toString('hex')}`,
      rpm: null,
      tpm: null,
      maxConcurrent: null,
      weight: 1,
      ...limits,
    };
  }

  function key(of: TeamLimits | null, limits: Partial<Principal> = {}): Principal {
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
      ...limits,
    };
  }

  function admit(
    who: Principal,
    now: number,
    extra: Partial<AdmissionRequest> = {},
  ): Promise<AdmissionDecision> {
    const model = extra.model ?? 'm';
    return limiter.admit(
      {
        principal: who,
        kind: 'chat',
        model,
        requestId: `req_${String(++seq).padStart(8, '0')}`,
        tokenEstimate: 0,
        maxQueueDepth: 0,
        queue: queueOf(model),
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
    plain = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
    await plain.connect();
    redis = cluster ? clusterLayout(plain) : plain;
    limiter = new Limiter(redis, namespace, LEASE_MS);
    recorder = new UsageRecorder(redis, namespace, 'chat');
  });

  afterAll(async () => {
    const keys = await plain.keys(`${namespace}:*`);
    if (keys.length > 0) await plain.del(...keys);
    await plain.quit();
  });

  it("admits exactly the team's rpm across its keys under concurrent admissions", async () => {
    const shared = team({ rpm: 10 });
    const keys = Array.from({ length: 4 }, () => key(shared));
    const decisions = await Promise.all(Array.from({ length: 60 }, (_, i) => admit(keys[i % 4]!, T0)));
    expect(decisions.filter((d) => d.admitted)).toHaveLength(10);
    const refused = refusal(decisions.find((d) => !d.admitted)!);
    expect(refused).toMatchObject({ reason: 'team_requests', retryAfterMs: 60_000 });
    // The headers show the team's window: it has less left than the unlimited key.
    expect(refused.state).toMatchObject({ rpm: 10, requestsUsed: 10 });
    // Another team's key is not held back.
    expect((await admit(key(team({ rpm: 10 })), T0)).admitted).toBe(true);
  });

  it("admits exactly the team's max_concurrent across its keys, and frees a slot on release", async () => {
    const shared = team({ maxConcurrent: 3 });
    const keys = Array.from({ length: 3 }, () => key(shared));
    const decisions = await Promise.all(Array.from({ length: 30 }, (_, i) => admit(keys[i % 3]!, T0)));
    const admitted = decisions.filter((d) => d.admitted);
    expect(admitted).toHaveLength(3);
    expect(refusal(decisions.find((d) => !d.admitted)!).reason).toBe('team_concurrency');
    const held = ticketOf(admitted[0]!);
    expect(held).toMatchObject({ teamId: shared.id, teamLeased: true, leased: false });
    await limiter.release(held, true);
    expect((await admit(keys[2]!, T0 + 1)).admitted).toBe(true);
    expect((await admit(keys[1]!, T0 + 2)).admitted).toBe(false);
  });

  it("keeps a team's lease alive while refreshed, under the team's id", async () => {
    const shared = team({ maxConcurrent: 1 });
    const held = ticketOf(await admit(key(shared), T0));
    await limiter.refresh(shared.id, [held.id], T0 + LEASE_MS - 100);
    expect((await admit(key(shared), T0 + LEASE_MS + 1000)).admitted).toBe(false);
    expect((await admit(key(shared), T0 + 2 * LEASE_MS)).admitted).toBe(true);
  });

  it("needs both: the key's own limit refuses first, and a team's refusal counts nothing against the key", async () => {
    const shared = team({ rpm: 3 });
    const own = key(shared, { rpm: 2 });
    ticketOf(await admit(own, T0));
    ticketOf(await admit(own, T0 + 1));
    expect(refusal(await admit(own, T0 + 2)).reason).toBe('requests');
    const other = key(shared, { rpm: 5 });
    ticketOf(await admit(other, T0 + 3));
    expect(refusal(await admit(other, T0 + 4))).toMatchObject({ reason: 'team_requests' });
    // The refused request was not counted against `other`: one admission in its window.
    expect((await limiter.checkKey({ ...other, team: null }, T0 + 5)).state.requestsUsed).toBe(1);
  });

  it('takes back the key and the team when the model refuses, and on rollback', async () => {
    const shared = team({ rpm: 5, maxConcurrent: 5 });
    const own = key(shared, { rpm: 5 });
    const model = `depth-${seq}`;
    ticketOf(await admit(own, T0, { model, maxQueueDepth: 1 }));
    expect(refusal(await admit(own, T0 + 1, { model, maxQueueDepth: 1 })).reason).toBe('queue_full');
    const rolled = ticketOf(await admit(own, T0 + 2, { model: `${model}-b`, tokenEstimate: 0 }));
    await limiter.rollback(rolled);
    const byKey = await limiter.checkKey({ ...own, team: null }, T0 + 3);
    const byTeam = await limiter.checkKey({ ...own, rpm: null }, T0 + 3);
    expect([byKey.state.requestsUsed, byTeam.state.requestsUsed]).toEqual([1, 1]);
    expect(byTeam.state.rpm).toBe(5);
  });

  it("reserves the estimate against the team's tpm and settles it with the key's usage, once", async () => {
    const shared = team({ tpm: 100 });
    const one = key(shared);
    const two = key(shared);
    const requestId = `req_team_tpm_${cluster ? 'c' : 'n'}`;
    ticketOf(await admit(one, T0, { tokenEstimate: 80, requestId }));
    expect(refusal(await admit(two, T0 + 100, { tokenEstimate: 30 }))).toMatchObject({
      reason: 'team_tokens',
      state: { tpm: 100, tokensUsed: 80 },
    });
    expect(refusal(await admit(two, T0 + 100, { tokenEstimate: 101 })).reason).toBe('team_too_large');
    const subject = { requestId, model: 'm', keyId: one.keyId, teamId: shared.id };
    const amounts = { promptTokens: 7, completionTokens: 13, images: 0 };
    expect(await recorder.record(subject, amounts, T0 + 200)).toBe(true);
    expect(await recorder.record(subject, amounts, T0 + 300)).toBe(false);
    const after = await admit(two, T0 + 400, { tokenEstimate: 30 });
    expect(after).toMatchObject({ admitted: true, state: { tpm: 100, tokensUsed: 50 } });
  });

  it("counts a key's usage in its team's day once, which a team's usage report reads alone", async () => {
    const shared = team({});
    const one = key(shared);
    const subject = { requestId: `req_team_day_${cluster ? 'c' : 'n'}`, model: 'm', keyId: one.keyId };
    const amounts = { promptTokens: 7, completionTokens: 13, images: 0, cost: 1234 };
    expect(await recorder.record({ ...subject, teamId: shared.id }, amounts, T0)).toBe(true);
    expect(await recorder.record({ ...subject, teamId: shared.id }, amounts, T0 + 1)).toBe(false);
    const day = new Date(T0).toISOString().slice(0, 10);
    const report = await new UsageReader(redis, namespace).report(
      { team: shared.id, from: day, to: day, group_by: 'team,key' },
      'EUR',
    );
    const counts = { requests: 1, prompt_tokens: 7, completion_tokens: 13, images: 0, cost: 0.001234 };
    expect(report.data).toEqual([
      {
        key_id: one.keyId,
        team_id: shared.id,
        date: null,
        model: null,
        ...counts,
        batch: expect.any(Object),
      },
    ]);
    expect(report).toMatchObject({ currency: 'EUR', team: shared.id, totals: counts });
  });

  it("counts a stored read against the team's rpm too, and checks without counting", async () => {
    const shared = team({ rpm: 2 });
    const one = key(shared);
    expect((await limiter.countRequest(one, T0)).allowed).toBe(true);
    for (let i = 0; i < 3; i++) expect((await limiter.checkKey(key(shared), T0 + 1)).allowed).toBe(true);
    ticketOf(await admit(key(shared), T0 + 2));
    expect(await limiter.countRequest(one, T0 + 3)).toMatchObject({
      allowed: false,
      reason: 'team_requests',
    });
    expect(await limiter.checkKey(key(shared), T0 + 4)).toMatchObject({
      allowed: false,
      reason: 'team_requests',
    });
  });
});
