import type { Principal } from '@mgw/access';
import {
  GatewayError,
  jobProtocolVersionOf,
  type CancelMessage,
  type ChatDoneMessage,
  type ImageDoneMessage,
  type ModelEntry,
  type ModelKind,
  type ReattachMessage,
  type ReplyMessage,
} from '@mgw/contracts';
import { type ChatRequest, type JobEnvelopeFields } from '@mgw/request';
import { chatInferenceRequest } from '@mgw/testing';
import type { RequestTiming } from '@mgw/observability';
import type { JobDataOf, ReplyHandler } from '@mgw/queue';
import type { Admission } from './admission/admission.service';
import type { EventSink, JsonClient, SessionClient, StreamClient } from './client/session-client.port';
import type { AdmissionHold } from './admission/admission-hold';
import type { ResolvedModel, Unresolved } from './models/model.resolver';
import { RequestSession, type SessionDeps } from './request-session';
import type { Delivery, SessionRequest, StreamRenderer } from './session-request.types';

/**
 * Test support for sessions: a fake client at the session's port and fake services that record what a
 * session does with them. Specs outside the lib (test/unit) import it as `@mgw/session/fixtures`.
 */

export const principal: Principal = {
  keyId: 'key_000000000000000000000001',
  name: 'k',
  bootstrap: false,
  models: null,
  rpm: null,
  tpm: null,
  maxConcurrent: null,
  priority: 'normal',
  weight: 1,
};

export const entry = (id: string, extra: Partial<ModelEntry> = {}): ModelEntry => ({
  id,
  type: 'chat/compilations',
  owned_by: 'tests',
  created: 0,
  liveWorkers: 1,
  readyWorkers: 1,
  concurrency: 8,
  ...extra,
});

/** A delivery that has a client: a stream's or a JSON answer's. */
export type ClientDelivery = Exclude<Delivery, { mode: 'background' }>;

/** The settings the HTTP layer makes a session's clients with (a SessionWorld's config has them). */
export interface ClientSettings {
  sseKeepAliveMs: number;
  streamBufferLimitBytes: number;
  streamFlushTimeoutMs: number;
}

/** The client's end of a request in a spec: it gives the session its client, and it can leave. */
export interface ClientEnd {
  /** The session's client for `delivery`, made with `settings` where they matter. */
  clientFor(delivery: ClientDelivery, settings: ClientSettings): SessionClient;
  /** The client goes away (nothing happens once it has). */
  leave(): void;
}

/**
 * A client at the session's port, as the port documents it, recording what the session does with it: the
 * head (`status`, `headers`), a JSON answer (`sent`) and a stream's events, one line per call of its sink
 * (`written`: what is written before `open` reaches it at the open; nothing after its end or once the client
 * left). `leave()` is the client going away: `whenGone` hears it unless its answer was complete.
 */
export class FakeClient implements ClientEnd {
  /** The head's status: 0 until the 200 went out. */
  status = 0;
  readonly headers: Record<string, string> = {};
  readonly sent: unknown[] = [];
  readonly written: string[] = [];
  private left = false;
  private complete = false;
  private onGone: (() => void) | null = null;
  /** A stream's events before its `open`; null once it opened. */
  private early: string[] | null = [];
  /** A stream's end (done, fail, close, or its client gone): nothing more is written. */
  private ended = false;

  /** The client left before its answer was complete. */
  get gone(): boolean {
    return this.left && !this.complete;
  }

  clientFor(delivery: ClientDelivery): SessionClient {
    return delivery.mode === 'stream' ? this.stream() : this.json();
  }

  leave(): void {
    if (this.left) return;
    this.left = true;
    if (this.complete) return;
    this.ended = true;
    const onGone = this.onGone;
    this.onGone = null;
    onGone?.();
  }

  /** This client as one waiting for one JSON answer. */
  json(): JsonClient {
    const gone = () => this.gone;
    return {
      mode: 'json',
      get gone() {
        return gone();
      },
      setHeaders: (headers) => this.setHeaders(headers),
      whenGone: (onGone) => this.whenGone(onGone),
      send: (headers, body) => {
        this.head(headers);
        this.sent.push(body);
        this.complete = true;
        return Promise.resolve();
      },
    };
  }

  /** This client as one of a stream of events. */
  stream(): StreamClient {
    const write = (line: string) => {
      if (this.ended) return;
      if (this.early !== null) this.early.push(line);
      else this.written.push(line);
    };
    const close = () => {
      if (this.ended) return;
      this.ended = true;
      if (this.early === null) this.complete = true;
    };
    const events: EventSink = {
      data: (json, id) => write(id === undefined ? `data ${json}` : `data #${id} ${json}`),
      event: (name, json, id) =>
        write(id === undefined ? `event ${name} ${json}` : `event ${name} #${id} ${json}`),
      done: (id) => {
        write(id === undefined ? 'done' : `done #${id}`);
        close();
      },
      fail: (errorJson) => {
        write(`fail ${errorJson}`);
        close();
      },
      close,
    };
    const gone = () => this.gone;
    return {
      mode: 'stream',
      get gone() {
        return gone();
      },
      setHeaders: (headers) => this.setHeaders(headers),
      whenGone: (onGone) => this.whenGone(onGone),
      events,
      open: (headers) => {
        if (this.early === null || this.left) return false;
        this.head(headers);
        this.written.push(...this.early);
        this.early = null;
        if (this.ended) this.complete = true;
        return true;
      },
    };
  }

  /** Headers that go with the answer, until its head went out. */
  private setHeaders(headers: Record<string, string>): void {
    if (this.status === 0) Object.assign(this.headers, headers);
  }

  /** `onGone` hears the client leave before its answer was complete; at once when it has left already. */
  private whenGone(onGone: () => void): void {
    if (this.gone) onGone();
    else this.onGone = onGone;
  }

  /** The 200 with `headers`. */
  private head(headers: Record<string, string>): void {
    this.status = 200;
    Object.assign(this.headers, headers);
  }
}

/** A hold whose endings are recorded, in order. */
export function recordingHold(record: (what: string) => void, name = 'hold'): AdmissionHold {
  let ended = false;
  return {
    get ended() {
      return ended;
    },
    enqueued: () => record(`${name} enqueued`),
    release: () => {
      if (ended) return;
      ended = true;
      record(`${name} release`);
    },
    handOver: () => {
      if (ended) return;
      ended = true;
      record(`${name} hand_over`);
    },
    rollback: () => record(`${name} rollback`),
  } as unknown as AdmissionHold;
}

/**
 * Fake connections and services for sessions. Every model in `models` resolves as given (unknown ones are
 * 404s); `overloaded` models refuse admission; the jobs added and the replies routed are at hand.
 */
export class SessionWorld {
  readonly jobs: JobDataOf<ModelKind>[] = [];
  readonly handlers = new Map<string, ReplyHandler>();
  readonly models = new Map<string, ResolvedModel | Unresolved>();
  readonly overloaded = new Set<string>();
  /** Refusals of the request's first admission, by model. */
  readonly refusals = new Map<string, GatewayError>();
  /** A resolution waits for this, when set. */
  resolving: Promise<void> | null = null;
  enqueueResult: () => Promise<void> = () => Promise.resolve();
  removeResult: () => Promise<boolean> = () => Promise.resolve(true);
  endedCalls = 0;
  streamsEnabled = true;
  readonly logger = { warn: jest.fn(), error: jest.fn() };
  /** Every session made here, for `dispose`. */
  private readonly created: RequestSession<ModelKind>[] = [];
  readonly config = {
    defaultChatModel: 'a',
    defaultImageModel: 'sim-image',
    chatDeadlineMs: 60_000,
    embeddingDeadlineMs: 60_000,
    imageDeadlineMs: 60_000,
    sseKeepAliveMs: 0,
    resumeGraceMs: 0,
    workerSilenceMs: 3000,
    streamBufferLimitBytes: 1 << 20,
    streamFlushTimeoutMs: 0,
  };

  constructor(
    /** Where every call is recorded, as one line each. */
    private readonly record: (line: string) => void,
  ) {}

  /** The deps of sessions in this world; `overrides` replace parts. */
  deps(overrides: Partial<SessionDeps> = {}): SessionDeps {
    const record = this.record;
    return {
      config: this.config,
      resolver: {
        attempt: async (id: string) => {
          record(`lookup ${id}`);
          await this.resolving;
          return this.models.get(id) ?? { error: GatewayError.modelNotFound(id), declared: null };
        },
      },
      admissions: {
        admit: (_principal: Principal, _kind: ModelKind, model: ModelEntry) => {
          record(`admit ${model.id}`);
          const refusal = this.refusals.get(model.id);
          if (refusal) return Promise.reject(refusal);
          if (this.overloaded.has(model.id)) return Promise.reject(GatewayError.overloaded(model.id, 3));
          return Promise.resolve(this.admission(model.id, 'hold'));
        },
        admitFallback: (_principal: Principal, _kind: ModelKind, model: ModelEntry) => {
          if (this.overloaded.has(model.id)) return Promise.reject(GatewayError.overloaded(model.id, 3));
          return Promise.resolve(this.admission(model.id, `hold ${model.id}`));
        },
        adopt: () => recordingHold(record, 'adopted'),
      },
      job: {
        replyTo: 'mgw:reply:gw-1',
        envelope: (requestId: string, model: string, deadlineMs: number, now: number): JobEnvelopeFields => ({
          v: jobProtocolVersionOf('chat'),
          requestId,
          model,
          replyTo: 'mgw:reply:gw-1',
          deadline: now + deadlineMs,
          enqueuedAt: now,
        }),
        route: (id: string, handler: ReplyHandler) => {
          record(`register ${id}`);
          this.handlers.set(id, handler);
        },
        routeResumed: (id: string, handler: ReplyHandler) => {
          record(`register resumed ${id}`);
          this.handlers.set(id, handler);
        },
        unroute: (id: string) => {
          record(`unregister ${id}`);
          this.handlers.delete(id);
        },
        enqueue: (_kind: ModelKind, data: JobDataOf<ModelKind>) => {
          this.jobs.push(data);
          record(`enqueue ${data.model}`);
          return this.enqueueResult();
        },
        removeWaiting: (_kind: ModelKind, model: string) => {
          record(`remove ${model}`);
          return this.removeResult();
        },
        cancel: (workerId: string, message: CancelMessage) => record(`cancel ${workerId} ${message.reason}`),
        reattach: (workerId: string, message: ReattachMessage) =>
          record(`reattach ${workerId} ${message.reattach}`),
      },
      metrics: {
        timingFor: (_id: string, model: string) => this.timing(model),
        clientDisconnected: (model: string) => record(`disconnected ${model}`),
        graceExpired: (model: string) => record(`grace expired ${model}`),
        fellBack: (from: string, to: string, reason: string) => record(`fallback ${from}→${to} ${reason}`),
        streamResumed: (model: string, outcome: string) => record(`resumed ${model} ${outcome}`),
      },
      streams: {
        enabled: this.streamsEnabled,
        resumeOptions: () => ({
          retentionMs: 600_000,
          maxEntries: 10_000,
          graceMs: this.config.resumeGraceMs,
        }),
        open: () => Promise.resolve(),
        route: () => Promise.resolve(),
        read: () => Promise.resolve([]),
      },
      logger: this.logger,
      ended: () => {
        this.endedCalls++;
      },
      ...overrides,
    };
  }

  /** The job's first output, and its queue landing (for a fallback's job: the switch is done). */
  private timing(model: string): RequestTiming {
    let output = false;
    const first = this.jobs.length === 0 ? null : this.jobs[0]!.model;
    return {
      enqueued: () => {
        if (first !== null && model !== first) this.record(`switched ${model}`);
      },
      started: () => undefined,
      output: () => {
        if (output) return;
        output = true;
        this.record(`output ${model}`);
      },
      ended: () => undefined,
    } as unknown as RequestTiming;
  }

  private admission(model: string, hold: string): Admission {
    return {
      fields: { keyId: principal.keyId, priority: 2 },
      weight: 1,
      ticket: { id: 't1', keyId: principal.keyId, requestId: 'r', kind: 'chat', model, leased: true },
      hold: recordingHold(this.record, hold),
      headers: {},
    };
  }

  /**
   * A session for `request` delivered as `delivery`, to the client `client` (a fresh fake when not given;
   * none for a background delivery).
   */
  session<K extends ModelKind>(
    request: Partial<SessionRequest<K>> & { requestId: string },
    delivery: Delivery,
    client: ClientEnd | null = new FakeClient(),
    deps: SessionDeps = this.deps(),
  ): RequestSession<K> {
    const session = new RequestSession<K>(
      deps,
      {
        kind: 'chat' as K,
        principal,
        model: undefined,
        request: chatInferenceRequest() as SessionRequest<K>['request'],
        tokenEstimate: 10,
        ...request,
      },
      delivery,
      client === null || delivery.mode === 'background' ? null : client.clientFor(delivery, this.config),
    );
    this.created.push(session);
    return session;
  }

  /**
   * Ends the sessions a test left under way (a job still queued, say), as a gateway's drain does: their
   * deadline timers would otherwise keep Jest waiting for the full deadline after the run.
   */
  dispose(): void {
    for (const session of this.created.splice(0)) {
      if (!session.ended) session.shutdown(GatewayError.serviceUnavailable('The test is over.'));
    }
  }

  /** A reply of request `requestId`'s current job. */
  reply(requestId: string, message: Record<string, unknown>, seq = 0): void {
    this.handlers.get(requestId)!.onMessage({ requestId, seq, ...message } as never);
  }
}

/** Lets pending promises (resolution, admission, enqueue, removal) settle. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

/** Lets the switch to the next model (resolution, admission, enqueue) run. */
export const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** What the old attempts' world recorded: the jobs, their removals and cancels, hand-overs and the answer. */
const KEPT = /^(enqueue|remove|cancel|fallback|switched|output) /;

/** The id of a FallbackWorld's request. */
export const FALLBACK_REQUEST_ID = 'req_attempts_01';

/** How a FallbackWorld's request for `a` is served. */
export interface FallbackPlan {
  /** The requested model's catalog fallbacks. */
  fallbacks?: string[];
  /** The requested model has no live worker: its job waits this long for one. */
  startWithinMs?: number;
  checkModel?: (model: ModelEntry) => void;
  /** The requested model's catalog URL policy. */
  urlInputs?: ModelEntry['urlInputs'];
  /** The chat job request, when not a plain `hi`. */
  request?: ChatRequest;
  /** The model asked for, when not `a` (declared by the test). */
  requested?: string;
  /** Deliver as a stream (whose keep-alive bound also bounds a cold start while a fallback remains). */
  stream?: { keepAliveMs: number };
}

/**
 * Sessions for model `a` over the recording world, to `client` (a fake at the session's port unless given);
 * the replies of each job are played by the test. `events` is everything observable, in order: jobs,
 * removals, cancels, hand-overs (`fallback a→b reason`, `switched b` once b's job is queued), each job's
 * first output, what the renderer of each model got, and the answer when the request failed before anything
 * reached the client (`failed status code`).
 */
export class FallbackWorld {
  readonly events: string[] = [];
  readonly world = new SessionWorld((line) => {
    if (KEPT.test(line)) this.events.push(line);
  });
  readonly jobs: JobDataOf<'chat'>[] = this.world.jobs as JobDataOf<'chat'>[];
  readonly models = this.world.models;
  readonly overloaded = this.world.overloaded;
  session!: RequestSession<'chat'>;
  readonly failures: GatewayError[] = [];

  set resolving(gate: Promise<void> | null) {
    this.world.resolving = gate;
  }

  constructor(readonly client: ClientEnd = new FakeClient()) {
    for (const id of ['b', 'c', 'd']) this.models.set(id, { model: entry(id) });
  }

  private renderer(model: string): StreamRenderer {
    return {
      delta: (_choice, content) => void this.events.push(`delta ${model} ${content}`),
      toolCall: () => undefined,
      image: () => undefined,
      done: (_done: ChatDoneMessage | ImageDoneMessage) => void this.events.push(`done ${model}`),
      error: (error) => void this.events.push(`sink error ${model} ${error.code}`),
      moved: () => undefined,
    };
  }

  /** Starts the request for `a` and lets it admit and enqueue its first job. */
  async attempts(plan: FallbackPlan = {}): Promise<RequestSession<'chat'>> {
    const { world } = this;
    if (!this.models.has('a')) {
      const model = entry('a', {
        ...(plan.fallbacks && { fallbacks: plan.fallbacks }),
        ...(plan.urlInputs && { urlInputs: plan.urlInputs }),
      });
      this.models.set('a', {
        model,
        ...(plan.startWithinMs !== undefined && { startWithinMs: plan.startWithinMs }),
      });
    }
    if (plan.stream) world.config.sseKeepAliveMs = plan.stream.keepAliveMs;
    const delivery: Delivery = plan.stream
      ? {
          mode: 'stream',
          format: { protocol: 'test' },
          renderer: (_sse, context) => this.renderer(context.model),
        }
      : {
          mode: 'json',
          renderer: (context) => {
            const renderer = this.renderer(context.model);
            return { ...renderer, done: (done) => renderer.done(done) };
          },
        };
    this.session = world.session<'chat'>(
      {
        requestId: FALLBACK_REQUEST_ID,
        model: plan.requested ?? 'a',
        ...(plan.checkModel && { checkModel: plan.checkModel }),
        ...(plan.request && { request: plan.request }),
      },
      delivery,
      this.client,
    );
    this.session.run().catch((error: GatewayError) => {
      // A client that left is not answered: its run only returns.
      if (error.code === 'client_closed_request') return;
      this.failures.push(error);
      this.events.push(`failed ${error.status} ${error.code}`);
    });
    await flush();
    return this.session;
  }

  /** The model of the current attempt: the one that serves the request once it has output. */
  get model(): string {
    const state = this.session.current;
    return state.name === 'idle' || state.name === 'ended' ? '' : state.attempt.model;
  }

  /** Ends the sessions the test left under way (SessionWorld.dispose). */
  dispose(): void {
    this.world.dispose();
  }

  /** The client goes away. */
  abandon(): void {
    this.client.leave();
  }

  /** The request is over: the registry heard its end. */
  get ended(): boolean {
    return this.world.endedCalls > 0;
  }

  /** A reply of the current attempt's job. */
  reply(message: Omit<ReplyMessage, 'requestId' | 'seq'>): void {
    this.world.reply(FALLBACK_REQUEST_ID, message);
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
