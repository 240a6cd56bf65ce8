import type { Principal } from '@mgw/access';
import { GatewayError, type ModelEntry, type ModelLookup } from '@mgw/contracts';
import { chatInferenceRequest } from '@mgw/testing';
import type { ModelDirectory } from '@mgw/registry';
import type { Attempt } from './machine/session.types';
import { ModelResolver } from './models/model.resolver';
import { flush, SessionWorld } from './request-session.fixtures';

const entry = (id: string, live: boolean, fallbacks?: string[]): ModelEntry => ({
  id,
  type: 'chat/compilations',
  owned_by: 'tests',
  created: 0,
  liveWorkers: live ? 1 : 0,
  readyWorkers: live ? 1 : 0,
  concurrency: live ? 8 : 0,
  ...(fallbacks && { fallbacks }),
});

const keyFor = (models: string[] | null): Principal => ({
  keyId: 'key_000000000000000000000001',
  name: 'k',
  bootstrap: false,
  models: models && new Set(models),
  rpm: null,
  tpm: null,
  maxConcurrent: null,
  priority: 'normal',
  weight: 1,
});

/** What a session admitted: its model, its job's, the fallbacks left, and the requested model's refusal. */
interface Admitted {
  model: { id: string };
  job: { model: string };
  fallbacks: readonly string[];
  refusal: GatewayError | null;
}

/** A registry of models and a limiter whose refusals per model the test sets; every call is recorded. */
class Setup {
  readonly models = new Map<string, ModelEntry>();
  readonly refusals: Map<string, GatewayError>;
  readonly calls: string[] = [];
  private readonly world = new SessionWorld((line) => {
    if (/^(admit|fallback) /.test(line)) this.calls.push(line);
  });

  constructor() {
    this.refusals = this.world.refusals;
  }

  /** Ends the sessions a test left queued. */
  dispose(): void {
    this.world.dispose();
  }

  /** Serves a request for `big` until its job is enqueued (or it is refused, which rejects). */
  async admit(principal: Principal, checkModel?: (model: ModelEntry) => void): Promise<Admitted> {
    const directory = {
      lookup: (id: string): Promise<ModelLookup> => {
        this.calls.push(`lookup ${id}`);
        const model = this.models.get(id);
        if (!model) return Promise.resolve({ state: 'unknown' });
        return Promise.resolve({ state: model.liveWorkers > 0 ? 'live' : 'unavailable', model });
      },
    } as unknown as ModelDirectory;
    const session = this.world.session(
      {
        requestId: 'req_pipeline_01',
        principal,
        model: 'big',
        request: chatInferenceRequest(),
        tokenEstimate: 10,
        ...(checkModel && { checkModel }),
      },
      {
        mode: 'json',
        renderer: () => ({
          delta: () => undefined,
          toolCall: () => undefined,
          image: () => undefined,
          done: () => ({}),
        }),
      },
      undefined,
      this.world.deps({ resolver: new ModelResolver(directory) }),
    );
    let refusal: GatewayError | null = null;
    session.run().catch((error: GatewayError) => (refusal = error));
    await flush();
    if (refusal !== null) throw refusal as GatewayError;
    const state = session.current as { attempt: Attempt };
    const job = this.world.jobs.at(-1)!;
    return {
      model: { id: state.attempt.model },
      job: { model: job.model },
      fallbacks: state.attempt.remaining,
      refusal: state.attempt.refusal,
    };
  }
}

async function refusalOf(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('RequestSession: admission with fallbacks', () => {
  let setup: Setup;

  beforeEach(() => {
    setup = new Setup();
    setup.models.set('small', entry('small', true));
    setup.models.set('tiny', entry('tiny', true));
  });

  afterEach(() => setup.dispose());

  it('admits a live model as asked, carrying its fallbacks the key may use', async () => {
    setup.models.set('big', entry('big', true, ['small', 'tiny']));
    const admitted = await setup.admit(keyFor(['big', 'tiny']));
    expect([admitted.model.id, admitted.job.model, admitted.fallbacks, admitted.refusal]).toEqual([
      'big',
      'big',
      ['tiny'],
      null,
    ]);
    expect(setup.calls).toEqual(['lookup big', 'admit big']);
  });

  it('admits the first fallback when the model has no live worker: one admission, for the model that gets the job', async () => {
    setup.models.set('big', entry('big', false, ['small', 'tiny']));
    const admitted = await setup.admit(keyFor(null));
    expect([admitted.model.id, admitted.job.model, admitted.fallbacks]).toEqual(['small', 'small', ['tiny']]);
    expect([admitted.refusal?.status, admitted.refusal?.code]).toEqual([503, 'model_unavailable']);
    expect(setup.calls).toEqual([
      'lookup big',
      'fallback big→small unavailable',
      'lookup small',
      'admit small',
    ]);
  });

  it('admits the next fallback when the model’s queue is full', async () => {
    setup.models.set('big', entry('big', true, ['small']));
    setup.refusals.set('big', GatewayError.overloaded('big', 4));
    const admitted = await setup.admit(keyFor(null));
    expect(admitted.model.id).toBe('small');
    expect(setup.calls).toEqual([
      'lookup big',
      'admit big',
      'fallback big→small overloaded',
      'lookup small',
      'admit small',
    ]);
  });

  it('answers with the key’s own limit, whichever model: it holds for all of them', async () => {
    setup.models.set('big', entry('big', true, ['small']));
    setup.refusals.set(
      'big',
      GatewayError.rateLimited('requests', 'Rate limit reached', { 'retry-after': '3' }),
    );
    const refusal = await refusalOf(setup.admit(keyFor(null)));
    expect([refusal.status, refusal.code]).toEqual([429, 'rate_limit_exceeded']);
    expect(setup.calls).toEqual(['lookup big', 'admit big']);
  });

  it('never takes a key to a fallback it may not use: it hears the model’s own refusal', async () => {
    setup.models.set('big', entry('big', false, ['small']));
    const refusal = await refusalOf(setup.admit(keyFor(['big'])));
    expect([refusal.status, refusal.code]).toEqual([503, 'model_unavailable']);
    expect(setup.calls).toEqual(['lookup big']);
  });

  it('refuses what the requested model cannot take, even if a fallback could; skips a fallback that cannot', async () => {
    setup.models.set('big', entry('big', true, ['small', 'tiny']));
    const tooLong = GatewayError.contextLengthExceeded(64, 100, true);
    const refusal = await refusalOf(
      setup.admit(keyFor(null), (model) => {
        if (model.id === 'big') throw tooLong;
      }),
    );
    expect(refusal).toBe(tooLong);

    setup.models.set('big', entry('big', false, ['small', 'tiny']));
    const admitted = await setup.admit(keyFor(null), (model) => {
      if (model.id === 'small') throw tooLong;
    });
    expect(admitted.model.id).toBe('tiny');
  });

  it('answers with the requested model’s refusal when no fallback can take the request', async () => {
    setup.models.set('big', entry('big', false, ['small', 'gone']));
    setup.models.set('small', entry('small', false));
    const refusal = await refusalOf(setup.admit(keyFor(null)));
    expect([refusal.status, refusal.code, refusal.message]).toEqual([
      503,
      'model_unavailable',
      'The model `big` has no live worker right now. Try again later.',
    ]);
    expect(setup.calls).toEqual([
      'lookup big',
      'fallback big→small unavailable',
      'lookup small',
      'fallback small→gone unavailable',
      'lookup gone',
    ]);
  });

  it('answers 404 for an unknown model, and for one the key may not use, without looking further', async () => {
    expect((await refusalOf(setup.admit(keyFor(null)))).code).toBe('model_not_found');
    setup.models.set('big', entry('big', true, ['small']));
    expect((await refusalOf(setup.admit(keyFor(['small'])))).code).toBe('model_not_found');
  });
});
