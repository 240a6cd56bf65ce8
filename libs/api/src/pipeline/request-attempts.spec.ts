import type { LoggerService } from '@nestjs/common';
import type { Principal } from '@mgw/access';
import {
  GatewayError,
  JOB_PROTOCOL_VERSION,
  type ChatJobData,
  type ModelEntry,
  type ReplyMessage,
} from '@mgw/contracts';
import type { GatewayMetrics } from '@mgw/observability';
import type { JobProducer, ReplyHandler, ReplyRouter } from '@mgw/queue';
import type { Admission, AdmissionService } from '../access/admission.service';
import { InflightRequest } from '../inflight/inflight-request';
import type { InflightRequests } from '../inflight/inflight.registry';
import type { ModelResolver, ResolvedModel, Unresolved } from '../models/model.resolver';
import { RequestAttempts, type AttemptPlan } from './request-attempts';

const requestId = 'req_attempts_01';

const entry = (id: string): ModelEntry => ({
  id,
  type: 'chat/compilations',
  owned_by: 'tests',
  created: 0,
  liveWorkers: 1,
  readyWorkers: 1,
  concurrency: 8,
});

const principal: Principal = {
  keyId: 'key_000000000000000000000001',
  name: 'k',
  bootstrap: false,
  models: null,
  rpm: null,
  tpm: null,
  maxConcurrent: null,
  priority: 'normal',
};

const upstreamFailed = () => GatewayError.workerFailed('The upstream model server failed (HTTP 500).');

/**
 * Real in-flight requests over a recording router and producer; the replies of each attempt's job are
 * played by the test. `events` is everything observable, in order.
 */
class World {
  readonly events: string[] = [];
  readonly jobs: ChatJobData[] = [];
  private readonly handlers = new Map<string, ReplyHandler>();
  /** What each model resolves to; a model not listed is unknown. */
  readonly models = new Map<string, ResolvedModel | Unresolved>();
  readonly overloaded = new Set<string>();
  committed = false;
  /** Switches under way, as the drain at shutdown counts them. */
  switches = 0;
  resolving: Promise<void> | null = null;

  readonly router = {
    register: (id: string, handler: ReplyHandler) => this.handlers.set(id, handler),
    unregister: (id: string) => this.handlers.delete(id),
  };
  readonly producer = {
    enqueue: (_kind: string, data: ChatJobData) => {
      this.jobs.push(data);
      this.events.push(`enqueue ${data.model}`);
      return Promise.resolve();
    },
    removeWaiting: (_kind: string, model: string) => {
      this.events.push(`remove ${model}`);
      return Promise.resolve(true);
    },
  };
  readonly logger: LoggerService = { log: jest.fn(), error: jest.fn(), warn: jest.fn() };

  readonly deps = {
    resolver: {
      attempt: async (id: string) => {
        await this.resolving;
        return this.models.get(id) ?? { error: GatewayError.modelNotFound(id), declared: null };
      },
    } as unknown as ModelResolver,
    admissions: {
      admitFallback: (_p: Principal, _k: string, model: ModelEntry): Promise<Admission> => {
        if (this.overloaded.has(model.id)) return Promise.reject(GatewayError.overloaded(model.id, 3));
        return Promise.resolve({
          fields: { keyId: principal.keyId, priority: 2 },
          ticket: {
            id: 't',
            keyId: principal.keyId,
            requestId: 'r',
            kind: 'chat',
            model: model.id,
            leased: false,
          },
          hold: null,
          track: (enqueue) => enqueue,
          holdUntil: () => undefined,
        });
      },
    } as unknown as AdmissionService,
    inflight: {
      switchStarted: () => {
        this.switches++;
        return () => this.switches--;
      },
      create: (id: string, kind: 'chat', model: string, sink: never) =>
        new InflightRequest(
          id,
          kind,
          model,
          {
            router: this.router as unknown as ReplyRouter,
            producer: this.producer as unknown as JobProducer,
            cancel: (worker, message) => this.events.push(`cancel ${worker} ${message.reason}`),
            logger: this.logger,
          },
          sink,
        ),
    } as unknown as InflightRequests,
    metrics: {
      fellBack: (from: string, to: string, reason: string) =>
        this.events.push(`fallback ${from}→${to} ${reason}`),
    } as unknown as GatewayMetrics,
    logger: this.logger,
  };

  readonly hooks = {
    sinkFor: (model: string) => ({
      onDelta: (_choice: number, content: string) => this.events.push(`delta ${model} ${content}`),
      onChatDone: () => this.events.push(`done ${model}`),
      onError: (error: GatewayError) => this.events.push(`sink error ${model} ${error.code}`),
    }),
    committed: () => this.committed,
    beforeOutput: (model: string) => this.events.push(`output ${model}`),
    switched: (model: string) => this.events.push(`switched ${model}`),
    failed: (error: GatewayError) => this.events.push(`failed ${error.status} ${error.code}`),
  };

  constructor() {
    for (const id of ['b', 'c', 'd']) this.models.set(id, { model: entry(id) });
  }

  attempts(plan: Partial<AttemptPlan<'chat'>> = {}): RequestAttempts<'chat'> {
    const now = Date.now();
    const job: ChatJobData = {
      v: JOB_PROTOCOL_VERSION,
      requestId,
      model: 'a',
      replyTo: 'mgw:reply:gw-1',
      deadline: now + 60_000,
      enqueuedAt: now,
      keyId: principal.keyId,
      priority: 2,
      request: { model: 'a', messages: [{ role: 'user', content: 'hi' }] },
      ...(plan.fallbacks?.length ? { hasFallback: true } : {}),
    };
    return new RequestAttempts<'chat'>(
      {
        kind: 'chat',
        job,
        reply: {} as never,
        principal,
        admission: {
          fields: { keyId: principal.keyId, priority: 2 },
          ticket: {
            id: 't',
            keyId: principal.keyId,
            requestId: 'r',
            kind: 'chat',
            model: 'm',
            leased: false,
          },
          hold: null,
          track: (enqueue) => enqueue,
          holdUntil: () => undefined,
        },
        deadlineMs: 60_000,
        startWithinMs: undefined,
        fallbacks: [],
        refusal: null,
        ...plan,
      },
      this.deps,
      this.hooks,
    );
  }

  /** A reply of the current attempt's job. */
  reply(message: Omit<ReplyMessage, 'requestId' | 'seq'>): void {
    this.handlers.get(requestId)!.onMessage({ requestId, seq: 0, ...message } as ReplyMessage);
  }

  fail(error: GatewayError): void {
    this.reply({ kind: 'error', error: error.toWire() } as never);
  }

  serve(text: string): void {
    this.reply({ kind: 'started', workerId: 'w1' } as never);
    this.reply({ kind: 'delta', choice: 0, content: text } as never);
    this.reply({
      kind: 'chat-done',
      finishReasons: ['stop'],
      usage: { prompt_tokens: 1, completion_tokens: 1 },
    } as never);
  }
}

/** Lets the switch to the next model (resolution, admission, enqueue) run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** Waits (bounded) until `events` has `count` entries: timers under test fire late on a busy machine. */
async function eventsOnceThere(world: World, count: number): Promise<string[]> {
  const deadline = Date.now() + 5000;
  while (world.events.length < count && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await settle();
  return world.events;
}

describe('RequestAttempts', () => {
  let world: World;

  beforeEach(() => {
    world = new World();
  });

  it('serves a request whose job fails before any output by the next model, under the same request id', async () => {
    const attempts = world.attempts({ fallbacks: ['b'] });
    await attempts.start();
    world.reply({ kind: 'started', workerId: 'w0' } as never);
    world.fail(upstreamFailed());
    await settle();
    expect(attempts.model).toBe('b');
    world.serve('from b');
    expect(world.events).toEqual([
      'enqueue a',
      'fallback a→b failed',
      'enqueue b',
      'switched b',
      'output b',
      'delta b from b',
      'done b',
    ]);
    const [first, second] = world.jobs;
    expect(first!.hasFallback).toBe(true);
    // The same request and deadline; its own model and enqueue time; no fallback left after it.
    expect(second).toEqual({ ...first, model: 'b', enqueuedAt: expect.any(Number), hasFallback: undefined });
    expect(second).not.toHaveProperty('hasFallback');
  });

  it('ends with its last attempt: whenEnded waits through a switch for the fallback’s job', async () => {
    const attempts = world.attempts({ fallbacks: ['b'] });
    await attempts.start();
    let ended = false;
    void attempts.whenEnded().then(() => (ended = true));
    world.fail(upstreamFailed());
    await settle();
    await settle();
    expect([attempts.model, ended]).toEqual(['b', false]);
    world.serve('from b');
    await settle();
    expect(ended).toBe(true);
  });

  it('never falls back once output was sent: the error is the answer', async () => {
    const attempts = world.attempts({ fallbacks: ['b'] });
    await attempts.start();
    world.reply({ kind: 'delta', choice: 0, content: 'half' } as never);
    world.fail(upstreamFailed());
    await settle();
    expect(world.events).toEqual(['enqueue a', 'output a', 'delta a half', 'failed 502 worker_error']);
  });

  it('does not fall back from what the client must fix, nor from its deadline', async () => {
    for (const error of [
      GatewayError.invalidRequest('temperature is not supported', 'temperature'),
      GatewayError.contextLengthExceeded(64, 100, false),
      GatewayError.deadlineExceeded(1000),
    ]) {
      const local = new World();
      const attempts = local.attempts({ fallbacks: ['b'] });
      await attempts.start();
      local.fail(error);
      await settle();
      expect(local.events).toEqual(['enqueue a', `failed ${error.status} ${error.code}`]);
    }
  });

  it('tells an error in an open stream to its sink and stays with its model', async () => {
    const attempts = world.attempts({ fallbacks: ['b'] });
    await attempts.start();
    world.committed = true;
    world.fail(upstreamFailed());
    await settle();
    expect(world.events).toEqual(['enqueue a', 'sink error a worker_error']);
  });

  it('skips fallbacks that cannot take the request, in order, and counts each hop with its reason', async () => {
    world.models.set('b', { error: GatewayError.modelUnavailable('b'), declared: entry('b') });
    world.overloaded.add('c');
    const attempts = world.attempts({ fallbacks: ['b', 'c', 'd'] });
    await attempts.start();
    world.fail(upstreamFailed());
    await settle();
    world.serve('from d');
    expect(world.events).toEqual([
      'enqueue a',
      'fallback a→b failed',
      'fallback b→c unavailable',
      'fallback c→d overloaded',
      'enqueue d',
      'switched d',
      'output d',
      'delta d from d',
      'done d',
    ]);
  });

  it('skips a fallback the request does not fit (checkModel), without asking the client to fix it', async () => {
    const attempts = world.attempts({
      fallbacks: ['b', 'c'],
      checkModel: (model) => {
        if (model.id === 'b') throw GatewayError.contextLengthExceeded(64, 100, true);
      },
    });
    await attempts.start();
    world.fail(upstreamFailed());
    await settle();
    expect(world.events.slice(-3)).toEqual(['fallback b→c unavailable', 'enqueue c', 'switched c']);
  });

  it('answers with the requested model’s own error when no fallback can serve', async () => {
    world.models.set('b', { error: GatewayError.modelUnavailable('b'), declared: entry('b') });
    const attempts = world.attempts({ fallbacks: ['b'] });
    await attempts.start();
    world.fail(new GatewayError(502, 'server_error', 'upstream_error', 'The upstream model server failed.'));
    await settle();
    expect(world.events).toEqual(['enqueue a', 'fallback a→b failed', 'failed 502 upstream_error']);
  });

  it('answers with the requested model’s refusal when the fallback admitted in its place fails too', async () => {
    const attempts = world.attempts({ fallbacks: ['c'], refusal: GatewayError.modelUnavailable('a') });
    await attempts.start();
    world.fail(upstreamFailed());
    await settle();
    world.fail(new GatewayError(504, 'timeout_error', 'upstream_timeout', 'The upstream timed out.'));
    await settle();
    expect(world.events).toEqual([
      'enqueue a',
      'fallback a→c failed',
      'enqueue c',
      'switched c',
      'failed 503 model_unavailable',
    ]);
  });

  it('falls back when a scale-to-zero model gets no worker in time', async () => {
    const attempts = world.attempts({ fallbacks: ['b'], startWithinMs: 5 });
    await attempts.start();
    expect(await eventsOnceThere(world, 5)).toEqual([
      'enqueue a',
      'remove a',
      'fallback a→b unavailable',
      'enqueue b',
      'switched b',
    ]);
  });

  it('bounds a cold-start wait by startWaitBoundMs while a fallback remains, not for the last model', async () => {
    world.models.set('b', { model: entry('b'), startWithinMs: 10 });
    const attempts = world.attempts({ fallbacks: ['b'], startWithinMs: 60_000, startWaitBoundMs: 5 });
    await attempts.start();
    // a waited 5 ms, not its 60 s; b (the last) waited its own 10 ms and the request failed as a's.
    expect(await eventsOnceThere(world, 7)).toEqual([
      'enqueue a',
      'remove a',
      'fallback a→b unavailable',
      'enqueue b',
      'switched b',
      'remove b',
      'failed 503 model_unavailable',
    ]);
  });

  it('counts as open while it switches, so a drain waits for it', async () => {
    let resolve!: () => void;
    world.resolving = new Promise<void>((r) => (resolve = r));
    const attempts = world.attempts({ fallbacks: ['b'] });
    await attempts.start();
    world.fail(upstreamFailed());
    expect([attempts.switching, world.switches]).toEqual([true, 1]);
    resolve();
    await settle();
    expect([attempts.switching, world.switches, attempts.model]).toEqual([false, 0, 'b']);
  });

  it('stops a switch under way when the client leaves: no further job', async () => {
    let resolve!: () => void;
    world.resolving = new Promise<void>((r) => (resolve = r));
    const attempts = world.attempts({ fallbacks: ['b'] });
    await attempts.start();
    world.fail(upstreamFailed());
    attempts.abandon();
    resolve();
    await settle();
    expect(world.events).toEqual(['enqueue a', 'fallback a→b failed']);
  });

  it('takes the current job back when the client leaves', async () => {
    const attempts = world.attempts({ fallbacks: ['b'] });
    await attempts.start();
    world.fail(upstreamFailed());
    await settle();
    attempts.abandon();
    await settle();
    expect(world.events.slice(-2)).toEqual(['switched b', 'remove b']);
  });

  it('never starts a fallback past the request’s deadline', async () => {
    const attempts = world.attempts({ fallbacks: ['b'] });
    await attempts.start();
    world.jobs[0]!.deadline = Date.now() - 1;
    // The job template is the same object: the deadline is the request's, whatever attempt runs.
    world.fail(upstreamFailed());
    await settle();
    expect(world.events).toEqual(['enqueue a', 'failed 504 deadline_exceeded']);
  });
});
