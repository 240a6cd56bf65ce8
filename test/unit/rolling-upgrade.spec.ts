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
  CHAT_MODEL_TYPE,
  PROTOCOL_VERSIONS,
  ProtocolVersionError,
  readVersionedDto,
  registryPatterns,
  validateChatRequest,
  type ProtocolFamily,
  type ReplyMessage,
} from '@mgw/contracts';
import {
  chatJobFields,
  ChatJobData,
  chatRequestOfBody,
  NEUTRAL_CHAT_JOB_VERSION,
  readChatJob,
  type ChatJob,
  type ChatRequest,
} from '@mgw/request';
import { translateMessagesRequest, validateMessagesRequest } from '@mgw/anthropic-api';
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

/** The chat job's request: a Chat Completions body up to version 3, the neutral request from version 4. */
function jobRequest(v: number | undefined, extra: boolean): Fields {
  const parts = [
    { type: 'text', text: 'hi', ...(extra && { cache_control: { type: 'ephemeral' } }) },
    { type: 'image_url', image_url: { url: 'https://x/y.png', ...(extra && { future: 1 }) } },
  ];
  const message = { role: 'user', ...(extra && { cache_control: { type: 'ephemeral' } }), content: parts };
  if ((v ?? 1) < NEUTRAL_CHAT_JOB_VERSION) {
    return {
      ...(extra && { future_parameter: true }),
      ...(extra && { prediction: { type: 'content', content: 'x', future: 1 } }),
      messages: [message],
    };
  }
  const neutral = chatRequestOfBody(validateChatRequest({ messages: [{ role: 'user', content: 'x' }] }));
  return { ...neutral, ...(extra && { futureField: true }), messages: [message] };
}

/** Runs one job through a worker's JobRunner with `reader`, and says what it read, or null when refused. */
async function runJob<T>(
  plain: Fields,
  reader: { read(plain: unknown): T },
): Promise<{ data: T | null; logged: string[]; sent: string[] }> {
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
  let data: T | null = null;
  try {
    const jobOf = { id: REQUEST_ID, data: plain, timestamp: Date.now() } as unknown as Job<unknown>;
    await runner.run(
      jobOf,
      reader as {
        read(plain: unknown): T & { requestId: string; model: string; replyTo: string; deadline: number };
      },
      'sim-chat',
      (context) => {
        data = context.data;
        return Promise.resolve();
      },
    );
  } catch {
    // refused: the runner has logged it and answered the gateway with an error
  } finally {
    runner.close();
  }
  return { data, logged, sent };
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
      request: jobRequest(v, extra),
    }),
  async read(message) {
    const { data, logged } = await runJob(fields(message), { read: readChatJob });
    if (data !== null) {
      const read: ChatJob = data;
      // What a newer gateway added is gone: the worker passes on only what it understands.
      // The version it was written as (none: 1); a chat job reads the same at every version up to this one's.
      expect(read.v).toBe((fields(message) as { v?: number }).v ?? 1);
      expect(read).not.toHaveProperty('queuedBy');
      if (read.resume !== undefined) {
        expect(read.resume).toEqual({ retentionMs: 1000, maxEntries: 16, graceMs: 0 });
      }
      expect(read.request).not.toHaveProperty('future_parameter');
      expect(read.request).not.toHaveProperty('futureField');
      if (read.request.relayedParameters !== undefined) {
        expect(read.request.relayedParameters).toEqual({ prediction: { type: 'content', content: 'x' } });
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

/**
 * The job's request changed shape in version 4 (the neutral request): a worker of the release before reads
 * chat bodies of versions 1 to 3 (`ChatJobData`, unchanged since) and hands its backends what its mapper
 * (`chatRequestOfBody`, moved to contracts verbatim) makes of one.
 */
const OLD_WORKER_JOB_VERSION = 3;
const oldWorker = {
  read(plain: unknown): ChatJob {
    const v = (plain as { v?: unknown }).v ?? 1;
    if (typeof v !== 'number' || v > OLD_WORKER_JOB_VERSION) throw new ProtocolVersionError('job', v);
    const data = readVersionedDto(ChatJobData, plain, 'job');
    return Object.assign(data, { request: chatRequestOfBody(data.request) });
  },
};

const envelopeOf = (fieldsOfJob: Fields): Fields => ({
  requestId: REQUEST_ID,
  model: 'sim-chat',
  replyTo: 'mgw:reply:gw-1',
  deadline: Date.now() + 60_000,
  enqueuedAt: Date.now(),
  ...fieldsOfJob,
});

const chatBody = (body: Fields) => validateChatRequest(body);
const messagesBody = (body: Fields) =>
  translateMessagesRequest(validateMessagesRequest({ model: 'sim-chat', max_tokens: 16, ...body })).request;
const WEATHER = {
  name: 'weather',
  input_schema: { type: 'object', properties: { city: { type: 'string' } } },
};

/** Requests as the front-ends of this release make them, and whether a chat body carries them. */
const REQUESTS: Array<[string, ChatRequest, boolean]> = [
  [
    'a plain chat completion',
    chatRequestOfBody(chatBody({ messages: [{ role: 'user', content: 'hi' }] })),
    true,
  ],
  [
    'a chat completion with tools, a format, logprobs and relayed parameters',
    chatRequestOfBody(
      chatBody({
        messages: [
          { role: 'system', content: 's' },
          { role: 'user', content: 'hi', name: 'ann' },
        ],
        tools: [{ type: 'function', function: { name: 'w', parameters: { type: 'object' } } }],
        tool_choice: 'required',
        response_format: { type: 'json_object' },
        logprobs: true,
        top_logprobs: 2,
        stop: ['x'],
        seed: 3,
        reasoning_effort: 'low',
      }),
    ),
    true,
  ],
  [
    'a Messages request with a tool loop and an image',
    messagesBody({
      system: 'Be brief.',
      tools: [WEATHER],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Oslo?' },
            { type: 'image', source: { type: 'url', url: 'https://x/y.png' } },
          ],
        },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Oslo' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'cold' }] },
      ],
      stop_sequences: ['END'],
    }),
    true,
  ],
  [
    'a Messages request with more stop sequences than a chat body takes',
    messagesBody({
      messages: [{ role: 'user', content: 'count' }],
      stop_sequences: ['1', '2', '3', '4', '5', '6'],
    }),
    false,
  ],
];

describe('rolling upgrades: the chat job, between a gateway and a worker of adjacent releases', () => {
  const asWritten = (request: ChatRequest, countOnly: boolean): Fields =>
    JSON.parse(JSON.stringify(envelopeOf(chatJobFields(request, countOnly)))) as Fields;

  describe.each(REQUESTS)('%s', (_name, request, inBody) => {
    it.each([false, true])(
      'is served by a worker of the release before as this one would serve it (count only: %s)',
      async (countOnly) => {
        const written = asWritten(request, countOnly);
        expect(written.v).toBe(inBody ? (countOnly ? 3 : 1) : NEUTRAL_CHAT_JOB_VERSION);
        const { data, sent } = await runJob(written, oldWorker);
        if (inBody) {
          expect(data?.request).toEqual(request);
          expect(data?.countOnly === true).toBe(countOnly);
        } else {
          // Refused by its version, and the waiting client told to retry once the rollout reaches it.
          expect(data).toBeNull();
          expect(sent.join()).toContain('"status":503');
        }
      },
    );

    it.each([false, true])('is served by a worker of this release (count only: %s)', async (countOnly) => {
      const { data } = await runJob(asWritten(request, countOnly), { read: readChatJob });
      expect(data?.request).toEqual(request);
      expect(data?.countOnly === true).toBe(countOnly);
    });
  });

  it('serves the jobs of a gateway of the release before: its chat bodies, counts at version 3', async () => {
    const bodies: Fields[] = [
      { messages: [{ role: 'user', content: 'hi' }] },
      {
        messages: [
          { role: 'user', content: 'q' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'w', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'c', content: 'r' },
        ],
        tools: [{ type: 'function', function: { name: 'w' } }],
        max_completion_tokens: 9,
        stop: ['a', 'b'],
        temperature: 0.2,
        user: 'u',
      },
    ];
    for (const body of bodies) {
      for (const [v, countOnly] of [
        [undefined, false],
        [1, false],
        [3, true],
      ] as const) {
        const written = JSON.parse(
          JSON.stringify(
            envelopeOf({
              ...(v !== undefined && { v }),
              request: chatBody(body),
              ...(countOnly && { countOnly }),
            }),
          ),
        ) as Fields;
        const [ours, theirs] = [
          await runJob(written, { read: readChatJob }),
          await runJob(written, oldWorker),
        ];
        expect(ours.data?.request).toEqual(chatRequestOfBody(chatBody(body)));
        expect(ours.data?.request).toEqual(theirs.data?.request);
        expect(ours.data?.countOnly === true).toBe(countOnly);
      }
    }
  });
});
