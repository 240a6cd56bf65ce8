import { randomBytes } from 'node:crypto';
import { Test, type TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { ConfigError, loadWorkerConfig, parseCatalog, type Catalog } from '@mgw/config';
import type { ModelKind } from '@mgw/contracts';
import { CancelListener, ModelQueueConsumer } from '@mgw/queue';
import { RegistryClient, WorkerAnnouncer } from '@mgw/registry';
import { ChatJobProcessor } from './chat-job.processor';
import { ImageJobProcessor } from './image-job.processor';
import { JobRunner } from './job-runner';
import type { ModelJobProcessor } from './model-job.processor';
import { ServedBackends } from './served-backends';
import { WorkerConnections } from './worker-connections.service';
import { WorkerLifecycle } from './worker.lifecycle';
import { WorkerModule } from './worker.module';
import { METRICS_SERVER, MODEL_PROCESSORS } from './worker.tokens';

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
    .useValue({ publisher: idle(), cancelSubscriber: idle(), blocking: idle() })
    .compile();
}

describe('WorkerModule wiring', () => {
  let module: TestingModule | undefined;

  afterEach(() => {
    if (!module) return;
    module.get(JobRunner).close();
    module = undefined;
  });

  it('builds a chat processor on its own backend for each served chat model', async () => {
    module = await compile('chat');

    const processors = module.get<ModelJobProcessor[]>(MODEL_PROCESSORS);
    expect(processors.map((p) => p.model)).toEqual(['chat-a', 'chat-b']);
    expect(processors.every((p) => p.processor instanceof ChatJobProcessor)).toBe(true);
    const backends = module.get(ServedBackends).all;
    expect(backends.map((b) => [b.kind, b.model.id])).toEqual([
      ['chat', 'chat-a'],
      ['chat', 'chat-b'],
    ]);
    expect(new Set(backends.map((b) => b.backend)).size).toBe(2);
  });

  it('builds image processors for an image worker, limited to WORKER_MODELS', async () => {
    module = await compile('image', { WORKER_MODELS: 'image-a' });

    const processors = module.get<ModelJobProcessor[]>(MODEL_PROCESSORS);
    expect(processors.map((p) => p.model)).toEqual(['image-a']);
    expect(processors[0]!.processor).toBeInstanceOf(ImageJobProcessor);
  });

  it('resolves every collaborator of the lifecycle once, and no metrics server without a port', async () => {
    module = await compile('chat');

    expect(module.get(WorkerLifecycle)).toBeInstanceOf(WorkerLifecycle);
    expect(module.get(METRICS_SERVER)).toBeNull();
    for (const token of [CancelListener, ModelQueueConsumer, RegistryClient, WorkerAnnouncer, JobRunner]) {
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
