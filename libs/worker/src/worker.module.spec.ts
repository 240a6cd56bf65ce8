import { randomBytes } from 'node:crypto';
import { DiscoveryModule } from '@nestjs/core';
import { Test, type TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { ConfigError, loadWorkerConfig, parseCatalog, type Catalog } from '@mgw/config';
import type { ModelKind } from '@mgw/contracts';
import { ControlListener, ModelQueueConsumer } from '@mgw/queue';
import { ChatJobProcessor } from './chat-job.processor';
import { ImageJobProcessor } from './image-job.processor';
import { JobConsumption } from './job-consumption';
import { JobHandlers } from './job-handlers.explorer';
import { JobRunner } from './job-runner';
import { ServedBackends } from './served-backends';
import { WorkerConnections } from './worker-connections.service';
import { WorkerLifecycle } from './worker.lifecycle';
import { WorkerModule } from './worker.module';
import { WorkerRegistration } from './worker.registration';
import { METRICS_SERVER } from './worker.tokens';

// Builds the module's providers without starting them (no init hooks): nothing is loaded, subscribed or
// registered, and the connections' owner is replaced by one whose connections never connect: no Redis.

function model(id: string, type: 'chat' | 'image') {
  return { id, type, owned_by: 'acme', created: 1_700_000_000, backend: { kind: 'simulator' } };
}

const catalog: Catalog = parseCatalog(
  JSON.stringify({
    models: [model('chat-a', 'chat'), model('image-a', 'image'), model('chat-b', 'chat')],
  }),
  'deploy/test-catalog.json',
);

const silent = { log: () => undefined, error: () => undefined, warn: () => undefined };

function compile(kind: ModelKind, env: Record<string, string> = {}): Promise<TestingModule> {
  const config = loadWorkerConfig(
    {
      KEY_PREFIX: `wiring-${randomBytes(4).toString('hex')}`,
      METRICS_PORT: '0',
      WORKER_ID: `wiring-${kind}`,
      ...env,
    },
    kind,
  );
  const idle = () => new Redis({ lazyConnect: true });
  return Test.createTestingModule({
    imports: [WorkerModule.forRoot({ kind, config, catalog, logger: silent })],
  })
    .overrideProvider(WorkerConnections)
    .useValue({ publisher: idle(), subscriber: idle(), blocking: idle() })
    .compile();
}

describe('WorkerModule wiring', () => {
  let module: TestingModule | undefined;

  afterEach(() => {
    if (!module) return;
    module.get(JobRunner).close();
    module = undefined;
  });

  it('finds the chat handler by discovery, and builds its own backend for each served chat model', async () => {
    module = await compile('chat');

    const process = jest.spyOn(module.get(ChatJobProcessor), 'process').mockResolvedValue('completed');
    const job = {} as Parameters<ChatJobProcessor['process']>[0];
    await expect(module.get(JobHandlers).handlerFor('chat')(job, 'chat-b')).resolves.toBe('completed');
    expect(process).toHaveBeenCalledWith(job, 'chat-b');
    const backends = module.get(ServedBackends).all;
    expect(backends.map((b) => [b.kind, b.model.id])).toEqual([
      ['chat', 'chat-a'],
      ['chat', 'chat-b'],
    ]);
    expect(new Set(backends.map((b) => b.backend)).size).toBe(2);
  });

  it('finds the image handler for an image worker, whose backends are limited to WORKER_MODELS', async () => {
    module = await compile('image', { WORKER_MODELS: 'image-a' });

    expect(module.get(ServedBackends).all.map((b) => [b.kind, b.model.id])).toEqual([['image', 'image-a']]);
    const process = jest.spyOn(module.get(ImageJobProcessor), 'process').mockResolvedValue('completed');
    const job = {} as Parameters<ImageJobProcessor['process']>[0];
    await module.get(JobHandlers).handlerFor('image')(job, 'image-a');
    expect(process).toHaveBeenCalledWith(job, 'image-a');
  });

  it('fails the start when a served kind has no @OnJob handler', async () => {
    const bare = await Test.createTestingModule({
      imports: [DiscoveryModule],
      providers: [JobHandlers],
    }).compile();
    expect(() => bare.get(JobHandlers).handlerFor('chat')).toThrow("no @OnJob('chat') handler");
  });

  it('resolves every collaborator of the lifecycle once, and no metrics server without a port', async () => {
    module = await compile('chat');

    expect(module.get(WorkerLifecycle)).toBeInstanceOf(WorkerLifecycle);
    expect(module.get(METRICS_SERVER)).toBeNull();
    for (const token of [
      ControlListener,
      ModelQueueConsumer,
      WorkerRegistration,
      JobConsumption,
      JobRunner,
    ]) {
      expect(module.get(token)).toBe(module.get(token));
    }
  });

  it('fails with the ConfigError of a model the catalog does not declare, before Nest builds anything', () => {
    expect(() => compile('chat', { WORKER_MODELS: 'chat-a,missing' })).toThrow(ConfigError);
    expect(() => compile('chat', { WORKER_MODELS: 'chat-a,missing' })).toThrow(
      'WORKER_MODELS: "missing" is not declared in catalog deploy/test-catalog.json',
    );
  });

  it('fails with the ConfigError of a backend option it cannot accept, before Nest builds anything', () => {
    const bad: Catalog = parseCatalog(
      JSON.stringify({
        models: [{ ...model('chat-a', 'chat'), backend: { kind: 'simulator', nonsense: 1 } }],
      }),
      'deploy/test-catalog.json',
    );
    expect(() =>
      WorkerModule.forRoot({
        kind: 'chat',
        config: loadWorkerConfig({}, 'chat'),
        catalog: bad,
        logger: silent,
      }),
    ).toThrow(/catalog model "chat-a": backend\.nonsense is not an option/);
  });
});
