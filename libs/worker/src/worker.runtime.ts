import { hostname } from 'node:os';
import { dirname, resolve } from 'node:path';
import type { LoggerService, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { UsageRecorder } from '@mgw/access';
import type { Catalog, CatalogModel, WorkerConfig } from '@mgw/config';
import { cancelChannelFor, GatewayError, type ModelKind, type WorkerHeartbeatDto } from '@mgw/contracts';
import {
  createChatBackend,
  createImageBackend,
  type BackendSettings,
  type ChatBackend,
  type ImageBackend,
} from '@mgw/inference';
import {
  CancelListener,
  closeRedis,
  createRedisConnection,
  ModelQueueConsumer,
  ReplyBatcher,
  waitUntilReady,
} from '@mgw/queue';
import { MetricsServer, promptFields, WorkerMetrics } from '@mgw/observability';
import { RegistryClient, WorkerAnnouncer } from '@mgw/registry';
import { ChatJobProcessor } from './chat-job.processor';
import { ImageJobProcessor } from './image-job.processor';
import { JobRunner, type JobOutcome } from './job-runner';
import { UsageReporter } from './usage.reporter';
import { selectServedModels } from './served-models';

const DEFAULT_CONCURRENCY: Record<ModelKind, number> = { chat: 8, image: 2 };
/** Parallel job fetch loops per model (WORKER_FETCHERS), never more than the concurrency. */
const DEFAULT_FETCHERS = 4;
const REDIS_READY_TIMEOUT_MS = 10_000;

/**
 * A worker process: consumes its models' queues, runs inference, publishes replies, and keeps itself
 * registered. It owns every connection it opens and closes them all on shutdown.
 */
export class WorkerRuntime implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly startedAt = Date.now();
  private readonly concurrency: number;
  private readonly fetchers: number;
  private readonly backends: Array<ChatBackend | ImageBackend> = [];
  private connections: Redis[] = [];
  private consumer: ModelQueueConsumer | null = null;
  private cancels: CancelListener | null = null;
  private runner: JobRunner | null = null;
  private registry: RegistryClient | null = null;
  private announcer: WorkerAnnouncer | null = null;
  private metrics: WorkerMetrics | null = null;
  private metricsServer: MetricsServer | null = null;
  private serving = false;

  constructor(
    private readonly kind: ModelKind,
    private readonly config: WorkerConfig,
    private readonly catalog: Catalog,
    private readonly logger: LoggerService,
  ) {
    this.concurrency = config.concurrency || DEFAULT_CONCURRENCY[kind];
    this.fetchers = ModelQueueConsumer.fetchLoopsFor(this.concurrency, config.fetchers || DEFAULT_FETCHERS);
  }

  async onApplicationBootstrap(): Promise<void> {
    const { config, kind } = this;
    const served = selectServedModels(this.catalog, kind, config.models);
    const metrics = new WorkerMetrics(
      `${kind}-worker`,
      served.map((m) => ({ id: m.id, kind: m.kind })),
    );
    this.metrics = metrics;
    if (config.metricsPort > 0) {
      // Up first, so /healthz answers while the backends load; /readyz waits until jobs are taken.
      this.metricsServer = new MetricsServer(
        { port: config.metricsPort, registry: metrics.registry, ready: () => this.ready },
        this.logger,
      );
      await this.metricsServer.start();
    }
    const settings: BackendSettings = {
      simChatTtftMs: config.simChatTtftMs,
      simChatTokensPerS: config.simChatTokensPerS,
      simImageLatencyMs: config.simImageLatencyMs,
      concurrency: this.concurrency,
      environment: config.environment,
      catalogDir: dirname(resolve(config.catalogPath)),
    };
    // Backends load (and fail on bad catalog entries) before the worker takes any job or registers.
    const backends = served.map((model) =>
      kind === 'chat' ? createChatBackend(model, settings) : createImageBackend(model, settings),
    );
    this.backends.push(...backends);
    await this.loadBackends(served, backends);

    const publisher = createRedisConnection(
      config.redisUrl,
      'command',
      `${config.instanceId}:publish`,
      this.logger,
    );
    const subscriber = createRedisConnection(
      config.redisUrl,
      'subscriber',
      `${config.instanceId}:cancel`,
      this.logger,
    );
    const blocking = createRedisConnection(
      config.redisUrl,
      'blocking',
      `${config.instanceId}:queue`,
      this.logger,
    );
    this.connections = [publisher, subscriber, blocking];
    await Promise.all(
      this.connections.map((c) => waitUntilReady(c, REDIS_READY_TIMEOUT_MS, config.redisUrl)),
    );

    this.cancels = new CancelListener(
      subscriber,
      cancelChannelFor(config.namespace, config.instanceId),
      this.logger,
    );
    await this.cancels.start();
    this.runner = new JobRunner(
      new ReplyBatcher(publisher),
      this.cancels,
      config.instanceId,
      this.logger,
      { heartbeatMs: config.replyHeartbeatMs },
      (model) => metrics.observerFor(model),
    );
    const runner = this.runner;
    const usage = new UsageReporter(new UsageRecorder(publisher, config.namespace, kind), this.logger);

    this.consumer = new ModelQueueConsumer(blocking, config.namespace, this.logger, config.jobLockMs);
    served.forEach((model, i) => {
      const backend = backends[i]!;
      const processor =
        kind === 'chat'
          ? new ChatJobProcessor(model.id, backend as ChatBackend, runner, usage)
          : new ImageJobProcessor(
              model.id,
              backend as ImageBackend,
              runner,
              config.namespace,
              config.imageResultTtlMs,
              usage,
            );
      this.consumer!.consume(kind, model.id, this.concurrency, this.fetchers, (job) =>
        this.instrumented(job, model.id, () => processor.process(job)),
      );
    });

    this.registry = new RegistryClient(config.redisUrl, config.namespace);
    await this.registry.connect();
    const beat = (): WorkerHeartbeatDto => ({
      instanceId: config.instanceId,
      models: served.map((m) => ({ id: m.id, type: m.type, owned_by: m.ownedBy })),
      concurrency: this.concurrency,
      hostname: hostname(),
      startedAt: this.startedAt,
    });
    this.announcer = new WorkerAnnouncer(this.registry, beat, config.heartbeatIntervalMs, this.logger);
    await this.announcer.start();
    this.serving = true;
    this.logger.log(
      `worker ${config.instanceId} serving ${served.map((m) => m.id).join(', ')} (concurrency ${this.concurrency}, ${this.fetchers} fetchers)`,
    );
  }

  /**
   * Loads what backends load at start (model weights), all before the worker takes a job or registers:
   * the registry must never list a model this process cannot answer yet.
   */
  private async loadBackends(
    served: CatalogModel[],
    backends: Array<ChatBackend | ImageBackend>,
  ): Promise<void> {
    await Promise.all(
      backends.map(async (backend, i) => {
        if (backend.load === undefined) return;
        const startedAt = Date.now();
        await backend.load();
        const detail = backend.describe?.();
        this.logger.log(
          `model ${served[i]!.id} loaded in ${Date.now() - startedAt} ms${detail ? ` (${detail})` : ''}`,
        );
      }),
    );
  }

  /** Ready while it takes jobs and its connections are up; not ready from the moment it starts stopping. */
  private get ready(): boolean {
    return this.serving && this.connections.every((c) => c.status === 'ready');
  }

  /**
   * Runs a job, counted in the metrics. Its log lines name it with a `requestId` field (the job id is the
   * request id, see jobOptionsFor, so this holds even for a payload that fails validation) — written where
   * the line is, not through an AsyncLocalStorage context, which would switch on async hooks for every
   * promise of every job.
   */
  private async instrumented(
    job: Job<unknown>,
    model: string,
    run: () => Promise<JobOutcome>,
  ): Promise<void> {
    // Only built when written: measuring the prompt is a JSON.stringify of it.
    if (this.config.logLevel === 'debug' || this.config.logLevel === 'verbose') {
      const request = (job.data as { request?: unknown } | null)?.request;
      this.logger.debug?.({
        msg: 'job started',
        requestId: String(job.id),
        model,
        ...promptFields(request, this.config.logPrompts),
      });
    }
    const finish = this.metrics!.jobStarted(model);
    try {
      finish(await run());
    } catch (error) {
      finish('failed');
      throw error;
    }
  }

  async onApplicationShutdown(): Promise<void> {
    // Leave the registry first so gateways stop sending work here, then drain, then disconnect.
    this.serving = false;
    await this.announcer?.stop();
    await this.drain();
    this.runner?.close();
    await this.registry?.close();
    await Promise.all(this.backends.map((backend) => backend.close()));
    await Promise.all(this.connections.map((connection) => closeRedis(connection)));
    await this.metricsServer?.stop();
  }

  /**
   * Stops taking jobs and lets running ones finish for up to WORKER_DRAIN_TIMEOUT_MS; jobs still running
   * then are stopped and their clients get a 503 they can retry, instead of a stream cut without a word.
   */
  private async drain(): Promise<void> {
    if (!this.consumer) return;
    const closed = this.consumer.close();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      closed.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(resolve, this.config.drainTimeoutMs, true))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      const stopped = this.cancels?.abortAll(
        GatewayError.serviceUnavailable('The model worker shut down before finishing. Retry the request.'),
      );
      this.logger.warn(`drain timeout: stopped ${stopped ?? 0} running job(s)`);
      await closed;
    }
  }
}
