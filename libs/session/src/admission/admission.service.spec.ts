import {
  jobPriorityOf,
  type AdmissionDecision,
  type AdmissionRequest,
  type Limiter,
  type Principal,
} from '@mgw/access';
import type { GatewayConfig } from '@mgw/config';
import { GatewayError, SCHEDULING_BANDS, type ModelEntry } from '@mgw/contracts';
import { GatewayMetrics } from '@mgw/observability';
import type { JobProducer } from '@mgw/queue';
import { AdmissionService } from './admission.service';

const principal: Principal = {
  keyId: 'key_000000000000000000000001',
  name: 'k',
  bootstrap: false,
  models: null,
  rpm: 60,
  tpm: 10_000,
  maxConcurrent: 2,
  priority: 'high',
  weight: 1,
};

const model: ModelEntry = {
  id: 'small',
  type: 'chat/compilations',
  owned_by: 'tests',
  created: 0,
  liveWorkers: 1,
  readyWorkers: 1,
  concurrency: 8,
  maxQueueDepth: 5,
};

const state = { rpm: null, requestsUsed: 0, requestsResetMs: 0, tpm: null, tokensUsed: 0, tokensResetMs: 0 };

function setup(decision: (request: AdmissionRequest) => AdmissionDecision) {
  const requests: AdmissionRequest[] = [];
  const calls: string[] = [];
  const limiter = {
    admit: (request: AdmissionRequest) => {
      requests.push(request);
      return Promise.resolve(decision(request));
    },
    enqueued: () => Promise.resolve(void calls.push('enqueued')),
    release: (_ticket: unknown, queued: boolean) =>
      Promise.resolve(void calls.push(`release(queued=${queued})`)),
    rollback: () => Promise.resolve(void calls.push('rollback')),
    refresh: () => Promise.resolve(),
  } as unknown as Limiter;
  const producer = {
    queueFor: () => ({ toKey: (type: string) => `q:${type}` }),
  } as unknown as JobProducer;
  const config = {
    concurrencySlotTtlMs: 30_000,
    defaultMaxQueueDepth: 1000,
    chatDeadlineMs: 600_000,
  } as GatewayConfig;
  const metrics = new GatewayMetrics();
  const service = new AdmissionService(config, limiter, producer, metrics);
  services.push(service);
  return { service, requests, calls, metrics };
}

// Each service keeps its slots alive on a timer: stop them, so none ticks into a later spec.
const services: AdmissionService[] = [];
afterEach(() => {
  for (const service of services.splice(0)) service.onApplicationShutdown();
});

const admitted = (request: AdmissionRequest): AdmissionDecision => ({
  admitted: true,
  ticket: {
    id: 't1',
    keyId: request.principal.keyId,
    requestId: request.requestId,
    kind: request.kind,
    model: request.model,
    leased: request.principal.maxConcurrent !== null,
  },
  state,
});

describe('AdmissionService.admitFallback', () => {
  it('checks only the fallback’s queue: the request keeps its slot, its request count and its token reservation', async () => {
    const { service, requests, calls } = setup(admitted);
    const budget = {
      currency: 'USD',
      spend: 1000,
      tokens: null,
      period: 'month' as const,
      softThreshold: 0.8,
    };
    const admission = await service.admitFallback({ ...principal, budget }, 'chat', model, 'req_fallback_1');
    expect(requests).toHaveLength(1);
    const [request] = requests;
    expect(request!.principal).toMatchObject({ rpm: null, tpm: null, maxConcurrent: null, budget: null });
    expect(request!.budget).toBeUndefined();
    expect([request!.model, request!.tokenEstimate, request!.maxQueueDepth]).toEqual(['small', 0, 5]);
    // Its own ticket name: a rollback must not take back the reservation filed under the request id.
    expect(request!.requestId).not.toBe('req_fallback_1');
    expect(admission.headers).toEqual({}); // the 200 may be out already
    // Its job settles the request's own budget reservation, filed under the request id at its admission.
    expect(admission.fields).toEqual({
      keyId: principal.keyId,
      priority: SCHEDULING_BANDS.high.parked,
      budgeted: true,
    });

    // The session that holds it: the job landed in its queue, then the request was over.
    admission.hold.enqueued();
    admission.hold.release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(['enqueued', 'release(queued=true)']);
    service.onApplicationShutdown();
  });

  it('refuses with 503 overloaded when the fallback’s queue is full, counting the refusal by reason', async () => {
    const { service, metrics } = setup(() => ({
      admitted: false,
      reason: 'queue_full',
      retryAfterMs: 0,
      state,
      depth: 5,
      servedLastMinute: 0,
    }));
    const refusal = await service
      .admitFallback(principal, 'chat', model, 'req_fallback_2')
      .catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(GatewayError);
    expect([(refusal as GatewayError).status, (refusal as GatewayError).code]).toEqual([503, 'overloaded']);
    const counted = await metrics.schedulerRefusals.get();
    expect(counted.values).toEqual([{ labels: { model: model.id, reason: 'queue_full' }, value: 1 }]);
    service.onApplicationShutdown();
  });
});

describe('AdmissionService.admit', () => {
  it("counts an embedding request's input tokens against the key's token budget, and an image request's none", async () => {
    const { service, requests } = setup(admitted);
    await service.admit(principal, 'embedding', { ...model, type: 'embeddings' }, 'req_embedding_1', 120);
    await service.admit(principal, 'image', { ...model, type: 'images/generations' }, 'req_image_1', 0);
    expect(requests.map((r) => [r.principal.tpm, r.tokenEstimate])).toEqual([
      [10_000, 120],
      [null, 0],
    ]);
  });

  describe('for a key in a team', () => {
    const team = { id: `team_${'ab'.repeat(12)}`, rpm: 100, tpm: 5000, maxConcurrent: 4, weight: 5 };
    const member: Principal = { ...principal, tpm: null, team };

    it("reserves tokens for the team's tpm even when the key has none, and none for an image", async () => {
      const { service, requests } = setup(admitted);
      await service.admit(member, 'chat', model, 'req_team_chat_1', 300);
      await service.admit(member, 'image', { ...model, type: 'images/generations' }, 'req_team_image', 0);
      expect(requests.map((r) => [r.tokenEstimate, r.principal.team?.tpm])).toEqual([
        [300, 5000],
        [0, null],
      ]);
    });

    it("carries the team to the job and schedules it at the team's weight", async () => {
      const { service } = setup(admitted);
      const admission = await service.admit(member, 'chat', model, 'req_team_chat_2', 10);
      expect(admission.fields).toMatchObject({ keyId: member.keyId, teamId: team.id });
      expect(admission.weight).toBe(5);
    });

    it("carries a batch line's id and its team to the line's job, in the batch tier", async () => {
      const { service } = setup(admitted);
      const batchLine = `batch_${'cd'.repeat(12)}:${'ef'.repeat(16)}`;
      const line: Principal = { ...member, priority: 'batch', batchLine };
      const admission = await service.admit(line, 'chat', model, 'batch_req_line_1', 10);
      expect(admission.fields).toEqual({
        keyId: member.keyId,
        teamId: team.id,
        priority: jobPriorityOf('batch'),
        batchLine,
      });
    });

    it.each([
      ['team_requests', 429, "requests per minute (RPM) of this key's team"],
      ['team_tokens', 429, "tokens per minute (TPM) of this key's team"],
      ['team_concurrency', 429, "concurrent requests for this API key's team"],
      ['team_too_large', 400, "of this key's team"],
    ] as const)('refuses %s with %i, saying it is the team', async (reason, status, words) => {
      const { service } = setup(() => ({
        admitted: false,
        reason,
        retryAfterMs: 1000,
        state: { ...state, rpm: 100, requestsUsed: 100, tpm: 5000, tokensUsed: 4990 },
        depth: 0,
        servedLastMinute: 0,
      }));
      const refusal = (await service
        .admit(member, 'chat', model, 'req_team_refused', 20)
        .catch((e: unknown) => e)) as GatewayError;
      expect(refusal.status).toBe(status);
      expect(refusal.message).toContain(words);
    });
  });

  describe('with a budget', () => {
    const pricing = {
      currency: 'USD',
      inputPerMillion: 1_000_000,
      cachedInputPerMillion: 1_000_000,
      outputPerMillion: 3_000_000,
      embeddingPerMillion: 0,
      perImage: {},
      batchFactorPpm: 1_000_000,
    };
    const priced = { ...model, pricing };
    const budget = {
      currency: 'USD',
      spend: 5_000_000,
      tokens: null,
      period: 'month' as const,
      softThreshold: 0.8,
    };

    it('reserves the maximum cost and tokens only for a key (or team) with a budget, and says so to the job', async () => {
      const { service, requests } = setup(admitted);
      const own = await service.admit(
        { ...principal, tpm: null, budget },
        'chat',
        priced,
        'req_budget_1',
        1000,
      );
      const team = {
        id: `team_${'cd'.repeat(12)}`,
        rpm: null,
        tpm: null,
        maxConcurrent: null,
        weight: 1,
        budget,
      };
      const ofTeam = await service.admit({ ...principal, team }, 'chat', priced, 'req_budget_2', 10);
      await service.admit(principal, 'chat', priced, 'req_budget_3', 1000);
      // A reservation waits for its settlement until the request's deadline and a margin (10 + 5 minutes).
      expect(requests.map((r) => r.budget?.holdMs)).toEqual([900_000, 900_000, undefined]);
      expect(
        requests.map((r) => r.budget && { maxCost: r.budget.maxCost, maxTokens: r.budget.maxTokens }),
      ).toEqual([{ maxCost: 3000, maxTokens: 1000 }, { maxCost: 30, maxTokens: 10 }, undefined]);
      expect(own.fields).toMatchObject({ budgeted: true });
      expect(ofTeam.fields).toMatchObject({ teamBudgeted: true });
      expect(ofTeam.fields.budgeted).toBeUndefined();
    });

    it.each([
      ['budget', 'this API key'],
      ['team_budget', "this API key's team"],
    ] as const)('refuses %s with 429 insufficient_quota, saying whose budget', async (reason, whose) => {
      const { service } = setup(() => ({
        admitted: false,
        reason,
        retryAfterMs: 0,
        state: {
          ...state,
          budgets: [
            {
              holder: reason === 'budget' ? 'key' : 'team',
              limits: budget,
              spent: 4_999_000,
              tokensUsed: 0,
              resetMs: 1000,
            },
          ],
        },
        depth: 0,
        servedLastMinute: 0,
      }));
      const refusal = (await service
        .admit({ ...principal, budget }, 'chat', priced, 'req_budget_refused', 20)
        .catch((e: unknown) => e)) as GatewayError;
      expect(refusal).toMatchObject({ status: 429, type: 'insufficient_quota', code: 'insufficient_quota' });
      expect(refusal.message).toContain(`the budget of ${whose} for this month`);
      expect(refusal.headers).toMatchObject({ 'x-ratelimit-remaining-budget': '0.001' });
    });
  });
});
