import { EventEmitter } from 'node:events';
import { Logger } from '@nestjs/common';
import { ClientProxyFactory, type ClientProxy } from '@nestjs/microservices';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { of } from 'rxjs';
import type { KeyAuthenticator, KeyStore } from '@mgw/access';
import { PubSubDispatcher, type RedisConnections } from '@mgw/redis';
import { KeyInvalidationListener, StreamLogStore } from '@mgw/session';
import { loadConfig, RedisOnlyConfig, type GatewayConfig } from '@mgw/config';
import {
  ChatJobData,
  CHAT_MODEL_TYPE,
  PROTOCOL_VERSIONS,
  registryPatterns,
  type ProtocolFamily,
  type ReplyMessage,
} from '@mgw/contracts';
import { UpstreamPool } from '@mgw/inference';
import { ControlListener, ReplyRouter, type ReplyBatcher } from '@mgw/queue';
import { createRegistryController, RegistryClient, type WorkerDirectory } from '@mgw/registry';
import { JobRunner } from '@mgw/worker';

/**
 * A rolling deploy runs old and new gateways, registries and workers together (README "Architecture",
 * protocol-version.ts). Every reader of a message between processes, at its call site, is fed:
 * - the message as a newer release of the same protocol version writes it, with fields this release does
 *   not know at every level: accepted, the unknown fields ignored;
 * - the message as a release before versions wrote it, without `v`: accepted as version 1;
 * - the message of the next protocol version: refused, with a log line naming that version.
 */

/** What a reader made of one message: whether it served it, and what it logged meanwhile. */
interface Outcome {
  accepted: boolean;
  logged: string[];
}

type Fields = Record<string, unknown>;

interface Family {
  name: string;
  family: ProtocolFamily;
  /** The message as this release writes it, with `extra` fields of a newer writer's merged in (or not). */
  message(v: number | undefined, extra: boolean): string | Fields;
  read(message: string | Fields): Promise<Outcome>;
}

const REQUEST_ID = 'req_0123456789abcdef';
const KEY_HASH = 'a'.repeat(64);
const withV = (v: number | undefined, fields: Fields): Fields =>
  v === undefined ? fields : { v, ...fields };
const raw = (message: string | Fields): string =>
  typeof message === 'string' ? message : JSON.stringify(message);
const fields = (message: string | Fields): Fields => (typeof message === 'string' ? {} : message);
const text = (value: unknown): string =>
  typeof value === 'string' ? value : ((value as { msg?: string }).msg ?? JSON.stringify(value));

/** Lines logged through Nest's Logger (the registry, the gateway's resume and key components). */
let nestLines: string[] = [];
beforeEach(() => {
  nestLines = [];
  for (const level of ['warn', 'error'] as const) {
    jest.spyOn(Logger.prototype, level).mockImplementation((message: unknown, ..._rest: unknown[]) => {
      nestLines.push(text(message));
    });
  }
});
afterEach(() => jest.restoreAllMocks());

function capturingLogger() {
  const logged: string[] = [];
  const push = (message: unknown) => {
    logged.push(text(message));
  };
  // Warnings and errors only: a message served is logged at most as routine.
  return { logged, logger: { warn: push, error: push, log: () => undefined, debug: () => undefined } };
}

/** A pub/sub subscriber that delivers what the test publishes. */
function fakeSubscriber() {
  return Object.assign(new EventEmitter(), { status: 'ready', subscribe: () => Promise.resolve(1) });
}

const job: Family = {
  name: 'job data (worker)',
  family: 'job',
  message: (v, extra) =>
    withV(v, {
      requestId: REQUEST_ID,
      model: 'sim-chat',
      replyTo: 'mgw:reply:gw-1',
      deadline: Date.now() + 60_000,
      enqueuedAt: Date.now(),
      ...(extra && { queuedBy: 'gw-2', resume: { retentionMs: 1000, maxEntries: 16, graceMs: 0, x: 1 } }),
      request: {
        ...(extra && { future_parameter: true }),
        ...(extra && { prediction: { type: 'content', content: 'x', future: 1 } }),
        messages: [
          {
            role: 'user',
            ...(extra && { cache_control: { type: 'ephemeral' } }),
            content: [
              { type: 'text', text: 'hi', ...(extra && { cache_control: { type: 'ephemeral' } }) },
              { type: 'image_url', image_url: { url: 'https://x/y.png', ...(extra && { future: 1 }) } },
            ],
          },
        ],
      },
    }),
  async read(message) {
    const sent: string[] = [];
    const publisher = {
      publish: (_channel: string, encoded: string) => {
        sent.push(encoded);
        return Promise.resolve(1);
      },
      gateOf: () => null,
      read: () => Promise.resolve(null),
    } as unknown as ReplyBatcher;
    const { logged, logger } = capturingLogger();
    const cancels = new ControlListener(
      new PubSubDispatcher(fakeSubscriber() as unknown as Redis),
      'mgw:cancel:w',
      logger,
    );
    const runner = new JobRunner(publisher, cancels, 'worker-1', logger, {
      heartbeatMs: 60_000,
      namespace: 'mgw',
    });
    let data: ChatJobData | null = null;
    try {
      const jobOf = {
        id: REQUEST_ID,
        data: fields(message),
        timestamp: Date.now(),
      } as unknown as Job<unknown>;
      await runner.run(jobOf, ChatJobData, 'sim-chat', (context) => {
        data = context.data;
        return Promise.resolve();
      });
    } catch {
      // refused: the runner has logged it and answered the gateway with an error
    } finally {
      runner.close();
    }
    if (data !== null) {
      const read: ChatJobData = data;
      // What a newer gateway added is gone: the worker passes on only what it understands.
      // The version it was written as (none: 1); a chat job reads the same at every version up to this one's.
      expect(read.v).toBe((fields(message) as { v?: number }).v ?? 1);
      expect(read).not.toHaveProperty('queuedBy');
      if (read.resume !== undefined) {
        expect(read.resume).toEqual({ retentionMs: 1000, maxEntries: 16, graceMs: 0 });
      }
      expect(read.request).not.toHaveProperty('future_parameter');
      if (read.request.prediction !== undefined) {
        expect(read.request.prediction).toEqual({ type: 'content', content: 'x' });
      }
      expect(read.request.messages).toEqual([
        {
          role: 'user',
          content: [
            { type: 'text', text: 'hi' },
            { type: 'image_url', image_url: { url: 'https://x/y.png' } },
          ],
        },
      ]);
    }
    return { accepted: data !== null, logged };
  },
};

const reply: Family = {
  name: 'reply messages and frames (gateway)',
  family: 'reply',
  message: (v, extra) =>
    withV(v, {
      requestId: REQUEST_ID,
      seq: 0,
      kind: 'started',
      workerId: 'w-1',
      ...(extra && { host: 'h' }),
    }),
  async read(message) {
    const subscriber = fakeSubscriber();
    const { logged, logger } = capturingLogger();
    const router = new ReplyRouter(
      new PubSubDispatcher(subscriber as unknown as Redis),
      'mgw:reply:gw-1',
      logger,
    );
    await router.start();
    const heard: ReplyMessage[] = [];
    router.register(REQUEST_ID, {
      onMessage: (m) => heard.push(m),
      onProtocolError: () => undefined,
      onConnectionLost: () => undefined,
    });
    // As a frame of two: the delta carries the same version as the message under test.
    const delta = { ...fields(message), seq: 1, kind: 'delta', choice: 0, content: 'x' };
    subscriber.emit('message', 'mgw:reply:gw-1', JSON.stringify([fields(message), delta]));
    if (heard.length > 0) {
      expect(heard[0]).toEqual({ requestId: REQUEST_ID, seq: 0, kind: 'started', workerId: 'w-1' });
    }
    return { accepted: heard.length === 2, logged };
  },
};

const replayLog: Family = {
  name: 'replay-log entries (gateway resuming a stream)',
  family: 'reply',
  message: reply.message,
  async read(message) {
    const frame = JSON.stringify(fields(message));
    const entry = ['1-0', ['f', frame, 'worker', 'w-1']];
    const store = new StreamLogStore(
      { commands: { xrange: () => Promise.resolve([entry]) } } as unknown as RedisConnections,
      { namespace: 'mgw', streamRetentionMs: 60_000 } as GatewayConfig,
    );
    try {
      const messages = await store.read(REQUEST_ID);
      return { accepted: messages.length === 1, logged: nestLines };
    } catch {
      return { accepted: false, logged: nestLines };
    }
  },
};

const control: Family = {
  name: 'control messages: cancel and reattach (worker)',
  family: 'control',
  message: (v, extra) =>
    withV(v, { requestId: REQUEST_ID, reason: 'client_disconnected', ...(extra && { by: 'gw-2' }) }),
  async read(message) {
    const subscriber = fakeSubscriber();
    const { logged, logger } = capturingLogger();
    const listener = new ControlListener(
      new PubSubDispatcher(subscriber as unknown as Redis),
      'mgw:cancel:w',
      logger,
    );
    await listener.start();
    const reattached: string[] = [];
    const controller = listener.track(REQUEST_ID, (channel) => reattached.push(channel));
    const { reason: _reason, ...base } = fields(message);
    subscriber.emit('message', 'mgw:cancel:w', JSON.stringify({ ...base, reattach: 'mgw:reply:gw-2' }));
    subscriber.emit('message', 'mgw:cancel:w', raw(message));
    return { accepted: controller.signal.aborted && reattached.length === 1, logged };
  },
};

function registryController(directory: Partial<WorkerDirectory>) {
  const Controller = createRegistryController(registryPatterns('mgw'));
  return new Controller(directory) as {
    onHeartbeat(payload: unknown): void;
    onDeregister(payload: unknown): void;
    getModel(payload: unknown): unknown;
  };
}

const heartbeat: Family = {
  name: 'heartbeats (registry)',
  family: 'registry',
  message: (v, extra) =>
    withV(v, {
      instanceId: 'chat-w-1',
      models: [
        { id: 'sim-chat', type: CHAT_MODEL_TYPE, owned_by: 'me', ready: true, ...(extra && { gpu: 'a' }) },
      ],
      concurrency: 4,
      hostname: 'h',
      startedAt: 1,
      ...(extra && { version: '2.0.0' }),
    }),
  read(message) {
    const beats: unknown[] = [];
    registryController({
      heartbeat: (beat: unknown) => {
        beats.push(beat);
        return { isNew: false };
      },
    }).onHeartbeat(fields(message));
    if (beats.length > 0) {
      expect(beats[0]).toEqual({
        instanceId: 'chat-w-1',
        models: [{ id: 'sim-chat', type: CHAT_MODEL_TYPE, owned_by: 'me', ready: true }],
        concurrency: 4,
        hostname: 'h',
        startedAt: 1,
      });
    }
    return Promise.resolve({ accepted: beats.length === 1, logged: nestLines });
  },
};

const deregistration: Family = {
  name: 'deregistrations (registry)',
  family: 'registry',
  message: (v, extra) => withV(v, { instanceId: 'chat-w-1', ...(extra && { reason: 'drain' }) }),
  read(message) {
    const gone: string[] = [];
    registryController({
      deregister: (id: string) => gone.push(id) > 0,
    }).onDeregister(fields(message));
    return Promise.resolve({ accepted: gone.length === 1, logged: nestLines });
  },
};

const lookup: Family = {
  name: 'model lookups (registry)',
  family: 'registry',
  message: (v, extra) => withV(v, { id: 'sim-chat', ...(extra && { tier: 'high' }) }),
  read(message) {
    const asked: string[] = [];
    registryController({
      lookup: (id: string) => {
        asked.push(id);
        return { state: 'unknown' };
      },
    }).getModel(fields(message));
    return Promise.resolve({ accepted: asked.length === 1, logged: nestLines });
  },
};

const entry = (v: number | undefined, extra: boolean): Fields =>
  withV(v, {
    id: 'sim-chat',
    type: CHAT_MODEL_TYPE,
    owned_by: 'me',
    created: 1,
    liveWorkers: 2,
    readyWorkers: 1,
    concurrency: 8,
    fallbacks: ['sim-b'],
    ...(extra && { region: 'eu', scaleToZero: { maxWaitMs: 5, burst: 1 } }),
  });

const answers: Family = {
  name: "the registry's answers (gateway)",
  family: 'registry',
  message: (v, extra) => withV(v, { state: 'live', model: entry(v, extra), ...(extra && { cachedFor: 1 }) }),
  async read(message) {
    const model = fields(fields(message).model as Fields);
    const list = [model];
    const proxy = {
      send: (pattern: string) => of(pattern.endsWith('models.list') ? list : fields(message)),
    } as unknown as ClientProxy;
    jest.spyOn(ClientProxyFactory, 'create').mockReturnValue(proxy);
    const client = new RegistryClient(
      loadConfig(RedisOnlyConfig, { REDIS_URL: 'redis://127.0.0.1:1' }).redis,
      'mgw',
    );
    try {
      const [found, listed] = [await client.getModel('sim-chat', 1000), await client.listModels(1000)];
      const expected = {
        id: 'sim-chat',
        type: CHAT_MODEL_TYPE,
        owned_by: 'me',
        created: 1,
        liveWorkers: 2,
        readyWorkers: 1,
        concurrency: 8,
        fallbacks: ['sim-b'],
      };
      const scaled = 'scaleToZero' in model ? { scaleToZero: { maxWaitMs: 5 } } : {};
      expect(found).toEqual({ state: 'live', model: { ...expected, ...scaled } });
      expect(listed).toEqual([{ ...expected, ...scaled }]);
      return { accepted: true, logged: nestLines };
    } catch {
      return { accepted: false, logged: nestLines };
    }
  },
};

const streamMeta: Family = {
  name: 'stream meta records (gateway resuming a stream)',
  family: 'streamMeta',
  message: (v, extra) =>
    withV(v, {
      keyId: 'key_0123456789abcdef01234567',
      model: 'sim-chat',
      created: 1,
      deadline: 2,
      ticketId: null,
      ...(extra && { region: 'eu' }),
    }),
  async read(message) {
    const store = new StreamLogStore(
      { commands: { get: () => Promise.resolve(raw(message)) } } as unknown as RedisConnections,
      { namespace: 'mgw', streamRetentionMs: 60_000 } as GatewayConfig,
    );
    const meta = await store.meta(REQUEST_ID);
    if (meta !== null) {
      expect(meta).toEqual({
        keyId: 'key_0123456789abcdef01234567',
        // A meta that names no protocol was written for a chat stream.
        protocol: 'chat.completions',
        model: 'sim-chat',
        created: 1,
        deadline: 2,
        ticketId: null,
      });
    }
    return { accepted: meta !== null, logged: nestLines };
  },
};

const keyInvalidation: Family = {
  name: 'key invalidations (gateway)',
  family: 'keyInvalidation',
  message: (v, extra) => (v === undefined ? KEY_HASH : `${KEY_HASH}|${v}${extra ? '|admin' : ''}`),
  async read(message) {
    let listener: { message(raw: string): void } | null = null;
    const pubsub = {
      listen: (_channel: string, l: { message(raw: string): void }) => {
        listener = l;
        return Promise.resolve();
      },
    } as unknown as PubSubDispatcher;
    const forgotten: string[] = [];
    const authenticator = {
      invalidate: (hash: string) => forgotten.push(hash),
      clear: () => forgotten.push('*'),
    } as unknown as KeyAuthenticator;
    const keys = { invalidationChannel: 'mgw:keys:changed' } as KeyStore;
    await new KeyInvalidationListener(pubsub, keys, authenticator).onModuleInit();
    listener!.message(raw(message));
    // One it cannot read still says a key changed: everything cached is forgotten.
    if (forgotten[0] === '*') return { accepted: false, logged: nestLines };
    expect(forgotten).toEqual([KEY_HASH]);
    return { accepted: true, logged: nestLines };
  },
};

const upstreamEvent: Family = {
  name: 'upstream events (workers of one model)',
  family: 'upstreamEvent',
  message: (v, extra) => `out|u1|chat-w-2${v === undefined ? '' : `|${v}${extra ? '|eu' : ''}`}`,
  async read(message) {
    let listener: { message(raw: string): void } | null = null;
    const { logged, logger } = capturingLogger();
    const pool = new UpstreamPool(
      'sim-chat',
      [{ name: 'u1', maxConcurrency: 1, probe: () => Promise.reject(new Error('down')) }],
      {
        maxAttempts: 1,
        failureThreshold: 1,
        probeIntervalMs: 60_000,
        routing: 'least-loaded',
        prefixMinTokens: 256,
        prefixWaitMs: 0,
        loadIntervalMs: 1000,
      },
    );
    await pool.start({
      redis: { publish: () => Promise.resolve(0) } as unknown as Redis,
      channel: {
        listen: (_channel, l) => {
          listener = l;
          return Promise.resolve();
        },
      },
      namespace: 'mgw',
      instanceId: 'chat-w-1',
      slotTtlMs: 60_000,
      logger,
    });
    try {
      listener!.message(raw(message));
      // The slot events of the same version: one of a newer writer, and one as releases before wrote it.
      listener!.message('free|u1');
      return {
        accepted: pool.stateOf(0) === 'out',
        logged: logged.filter((line) => !line.includes('probing')),
      };
    } finally {
      pool.stop();
    }
  },
};

const FAMILIES: Family[] = [
  job,
  reply,
  replayLog,
  control,
  heartbeat,
  deregistration,
  lookup,
  answers,
  streamMeta,
  keyInvalidation,
  upstreamEvent,
];

describe('rolling upgrades: every reader of a message between processes', () => {
  it('covers every protocol family', () => {
    expect(new Set(FAMILIES.map((f) => f.family))).toEqual(new Set(Object.keys(PROTOCOL_VERSIONS)));
  });

  describe.each(FAMILIES.map((f) => [f.name, f] as const))('%s', (_name, family) => {
    const current = PROTOCOL_VERSIONS[family.family];

    it('accepts a newer writer of the same version, ignoring the fields it does not know', async () => {
      const outcome = await family.read(family.message(current, true));
      expect(outcome).toEqual({ accepted: true, logged: [] });
    });

    it('accepts a message without a version as version 1 (a writer from before versions)', async () => {
      const outcome = await family.read(family.message(undefined, false));
      expect(outcome).toEqual({ accepted: true, logged: [] });
    });

    it('refuses the next version, with a log line naming it', async () => {
      const outcome = await family.read(family.message(current + 1, true));
      expect(outcome.accepted).toBe(false);
      expect(outcome.logged.length).toBeGreaterThan(0);
      for (const line of outcome.logged) {
        expect(line).toContain(
          `of protocol version ${current + 1} refused: this process reads versions 1 to ${current}`,
        );
      }
    });
  });
});
