import type { FastifyReply } from 'fastify';
import type { Principal } from '@mgw/access';
import {
  GatewayError,
  jobProtocolVersionOf,
  type CancelMessage,
  type ModelEntry,
  type ModelKind,
  type ReattachMessage,
} from '@mgw/contracts';
import { type JobEnvelopeFields } from '@mgw/request';
import { JsonReplyClient, SseReplyClient } from '@mgw/http';
import { chatInferenceRequest, FakeResponse } from '@mgw/testing';
import type { RequestTiming } from '@mgw/observability';
import type { JobDataOf, ReplyHandler } from '@mgw/queue';
import type { Admission } from './admission/admission.service';
import type { JsonClient, SessionClient, StreamClient } from './client/session-client.port';
import type { AdmissionHold } from './admission/admission-hold';
import type { ResolvedModel, Unresolved } from './models/model.resolver';
import { RequestSession, type SessionDeps } from './request-session';
import type { Delivery, SessionRequest, StreamFormat } from './session-request.types';

export { FakeResponse };

/** Test support for sessions: fake connections and services that record what a session does with them. */

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

export interface FakeReply {
  raw: FakeResponse;
  request: { headers: Record<string, string> };
  sent: unknown[];
  hijack(): void;
  status(code: number): FakeReply;
  header(name: string, value: string): FakeReply;
  send(body: unknown): Promise<void>;
}

export function fakeReply(): FakeReply {
  const reply: FakeReply = {
    raw: new FakeResponse(),
    request: { headers: {} },
    sent: [],
    hijack: () => undefined,
    status: () => reply,
    header: (name, value) => {
      reply.raw.headers[name] = value;
      return reply;
    },
    send: (body) => {
      reply.sent.push(body);
      reply.raw.writableFinished = true;
      return Promise.resolve();
    },
  };
  return reply;
}

/** A JSON answer's client on `reply`, as the HTTP layer makes it. */
export function jsonClient(reply: FakeReply): JsonClient {
  return new JsonReplyClient(reply as unknown as FastifyReply);
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

  /** A stream's client on `reply`, as the HTTP layer makes it with this world's settings. */
  streamClient(reply: FakeReply, format: Pick<StreamFormat, 'endLine' | 'keepAlive'> = {}): StreamClient {
    return new SseReplyClient(reply as unknown as FastifyReply, {
      bufferLimitBytes: this.config.streamBufferLimitBytes,
      keepAliveMs: this.config.sseKeepAliveMs,
      flushTimeoutMs: this.config.streamFlushTimeoutMs,
      ...(format.endLine !== undefined && { endLine: format.endLine }),
      ...(format.keepAlive !== undefined && { keepAlive: format.keepAlive }),
    });
  }

  /** The client `delivery` is given on `reply`: a stream's, a JSON answer's, none for a background one. */
  clientFor(delivery: Delivery, reply: FakeReply | null): SessionClient | null {
    if (reply === null || delivery.mode === 'background') return null;
    return delivery.mode === 'stream' ? this.streamClient(reply, delivery.format) : jsonClient(reply);
  }

  /** A session for `request` delivered as `delivery`, on `reply` (a fresh fake when not given). */
  session<K extends ModelKind>(
    request: Partial<SessionRequest<K>> & { requestId: string },
    delivery: Delivery,
    reply: FakeReply | null = fakeReply(),
    deps: SessionDeps = this.deps(),
  ): RequestSession<K> {
    return new RequestSession<K>(
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
      this.clientFor(delivery, reply),
    );
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
