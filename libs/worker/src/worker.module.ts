import { hostname } from 'node:os';
import { dirname, resolve } from 'node:path';
import { Module, type DynamicModule, type LoggerService, type Provider } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { UsageRecorder } from '@mgw/access';
import { WorkerConfig, type Catalog, type CatalogModel } from '@mgw/config';
import { cancelChannelFor, type ModelKind, type WorkerHeartbeatDto } from '@mgw/contracts';
import { MetricsServer, WorkerMetrics } from '@mgw/observability';
import {
  CancelListener,
  ModelQueueConsumer,
  PubSubDispatcher,
  ReplyBatcher,
  SubscriberBacklogMonitor,
} from '@mgw/queue';
import { RegistryClient, WorkerAnnouncer } from '@mgw/registry';
import { EmbeddingBatchers } from './embedding/embedding-batchers';
import { JobInstrumentation } from './job.instrumentation';
import { JobRunner } from './job-runner';
import { createModelJobProcessors } from './model-job.processor';
import { ServedBackends } from './served-backends';
import { selectServedModels } from './served-models';
import { UpstreamPools } from './upstream-pools';
import { UsageReporter } from './usage.reporter';
import { WorkerCapacity } from './worker.capacity';
import { WorkerConnections } from './worker-connections.service';
import { WorkerLifecycle } from './worker.lifecycle';
import { WorkerReadiness } from './worker.readiness';
import {
  CANCEL_CONNECTION,
  METRICS_SERVER,
  MODEL_PROCESSORS,
  PUBLISHER_CONNECTION,
  QUEUE_CONNECTION,
  SERVED_MODELS,
  WORKER_CATALOG,
  WORKER_KIND,
  WORKER_LOGGER,
} from './worker.tokens';

export interface WorkerModuleOptions {
  kind: ModelKind;
  config: WorkerConfig;
  catalog: Catalog;
  logger: LoggerService;
}

/** A job processor for each served model, on its backend. */
const modelProviders: Provider[] = [
  {
    provide: MODEL_PROCESSORS,
    useFactory: (
      backends: ServedBackends,
      runner: JobRunner,
      usage: UsageReporter,
      config: WorkerConfig,
      batchers: EmbeddingBatchers,
      metrics: WorkerMetrics,
    ) => createModelJobProcessors(backends.all, runner, usage, config, { batchers, metrics }),
    inject: [ServedBackends, JobRunner, UsageReporter, WorkerConfig, EmbeddingBatchers, WorkerMetrics],
  },
  {
    // Embedding models' inputs gathered into batched backend calls (none for other kinds).
    provide: EmbeddingBatchers,
    useFactory: (backends: ServedBackends, publisher: Redis, config: WorkerConfig, metrics: WorkerMetrics) =>
      new EmbeddingBatchers(backends, publisher, config, metrics),
    inject: [ServedBackends, PUBLISHER_CONNECTION, WorkerConfig, WorkerMetrics],
  },
];

/** The Redis connections, all owned (opened, awaited, closed) by WorkerConnections. */
const connectionProviders: Provider[] = [
  WorkerConnections,
  {
    provide: PUBLISHER_CONNECTION,
    useFactory: (connections: WorkerConnections) => connections.publisher,
    inject: [WorkerConnections],
  },
  {
    provide: CANCEL_CONNECTION,
    useFactory: (connections: WorkerConnections) => connections.cancelSubscriber,
    inject: [WorkerConnections],
  },
  {
    provide: QUEUE_CONNECTION,
    useFactory: (connections: WorkerConnections) => connections.blocking,
    inject: [WorkerConnections],
  },
];

/** Taking jobs, running them, replying, cancelling, and recording their usage. */
const jobProviders: Provider[] = [
  {
    // The one owner of the subscriber connection's listeners: the cancel channel, the upstream pools' channels.
    provide: PubSubDispatcher,
    useFactory: (subscriber: Redis) => new PubSubDispatcher(subscriber),
    inject: [CANCEL_CONNECTION],
  },
  {
    provide: CancelListener,
    useFactory: (dispatcher: PubSubDispatcher, config: WorkerConfig, logger: LoggerService) =>
      new CancelListener(dispatcher, cancelChannelFor(config.namespace, config.instanceId), logger),
    inject: [PubSubDispatcher, WorkerConfig, WORKER_LOGGER],
  },
  {
    provide: UpstreamPools,
    useFactory: (
      backends: ServedBackends,
      metrics: WorkerMetrics,
      config: WorkerConfig,
      publisher: Redis,
      dispatcher: PubSubDispatcher,
      logger: LoggerService,
    ) => new UpstreamPools(backends, metrics, config, publisher, dispatcher, logger),
    inject: [
      ServedBackends,
      WorkerMetrics,
      WorkerConfig,
      PUBLISHER_CONNECTION,
      PubSubDispatcher,
      WORKER_LOGGER,
    ],
  },
  {
    provide: ReplyBatcher,
    useFactory: (publisher: Redis, config: WorkerConfig, logger: LoggerService) =>
      new ReplyBatcher(
        publisher,
        new SubscriberBacklogMonitor(
          publisher,
          { pauseBytes: config.replyBacklogPauseBytes, maxPauseMs: config.replyBacklogMaxPauseMs },
          logger,
        ),
      ),
    inject: [PUBLISHER_CONNECTION, WorkerConfig, WORKER_LOGGER],
  },
  {
    provide: JobRunner,
    useFactory: (
      batcher: ReplyBatcher,
      cancels: CancelListener,
      config: WorkerConfig,
      logger: LoggerService,
      metrics: WorkerMetrics,
    ) =>
      new JobRunner(
        batcher,
        cancels,
        config.instanceId,
        logger,
        { heartbeatMs: config.replyHeartbeatMs, namespace: config.namespace },
        (model) => metrics.observerFor(model),
      ),
    inject: [ReplyBatcher, CancelListener, WorkerConfig, WORKER_LOGGER, WorkerMetrics],
  },
  {
    provide: UsageReporter,
    useFactory: (publisher: Redis, config: WorkerConfig, kind: ModelKind, logger: LoggerService) =>
      new UsageReporter(new UsageRecorder(publisher, config.namespace, kind), logger),
    inject: [PUBLISHER_CONNECTION, WorkerConfig, WORKER_KIND, WORKER_LOGGER],
  },
  {
    provide: ModelQueueConsumer,
    useFactory: (blocking: Redis, config: WorkerConfig, logger: LoggerService) =>
      new ModelQueueConsumer(blocking, config.namespace, logger, config.jobLockMs),
    inject: [QUEUE_CONNECTION, WorkerConfig, WORKER_LOGGER],
  },
  JobInstrumentation,
];

/** Metrics, the metrics/health port (none when METRICS_PORT is 0) and readiness. */
const observabilityProviders: Provider[] = [
  {
    provide: WorkerMetrics,
    useFactory: (kind: ModelKind, served: CatalogModel[]) =>
      new WorkerMetrics(
        `${kind}-worker`,
        served.map((m) => ({ id: m.id, kind: m.kind })),
      ),
    inject: [WORKER_KIND, SERVED_MODELS],
  },
  WorkerReadiness,
  {
    provide: METRICS_SERVER,
    useFactory: (
      config: WorkerConfig,
      metrics: WorkerMetrics,
      readiness: WorkerReadiness,
      logger: LoggerService,
    ): MetricsServer | null =>
      config.metricsPort > 0
        ? new MetricsServer(
            { port: config.metricsPort, registry: metrics.registry, ready: () => readiness.ready },
            logger,
          )
        : null,
    inject: [WorkerConfig, WorkerMetrics, WorkerReadiness, WORKER_LOGGER],
  },
];

/** Being listed in the registry while serving: the client and the heartbeats. */
const registryProviders: Provider[] = [
  {
    provide: RegistryClient,
    useFactory: (config: WorkerConfig) => new RegistryClient(config.redis, config.namespace),
    inject: [WorkerConfig],
  },
  {
    provide: WorkerAnnouncer,
    useFactory: (
      registry: RegistryClient,
      config: WorkerConfig,
      served: CatalogModel[],
      capacity: WorkerCapacity,
      pools: UpstreamPools,
      logger: LoggerService,
    ) => {
      const startedAt = Date.now();
      // `ready: false` while every upstream of the model is out: the registry then counts this worker as
      // not serving it, and gateways answer 503 model_unavailable (or use the model's fallbacks).
      const beat = (): WorkerHeartbeatDto => ({
        instanceId: config.instanceId,
        models: served.map((m) => ({
          id: m.id,
          type: m.type,
          owned_by: m.ownedBy,
          ...(pools.ready(m.id) ? {} : { ready: false }),
        })),
        concurrency: capacity.concurrency,
        hostname: hostname(),
        startedAt,
      });
      const announcer = new WorkerAnnouncer(registry, beat, config.heartbeatIntervalMs, logger);
      pools.onReadyChange(() => announcer.announceNow());
      return announcer;
    },
    inject: [RegistryClient, WorkerConfig, SERVED_MODELS, WorkerCapacity, UpstreamPools, WORKER_LOGGER],
  },
];

/**
 * A worker process for one model kind: consumes its models' queues, runs inference, publishes replies, and
 * keeps itself registered. The app supplies config, catalog and logger (see bootstrapWorker); WorkerLifecycle
 * starts and stops the rest in order.
 */
@Module({})
export class WorkerModule {
  static forRoot({ kind, config, catalog, logger }: WorkerModuleOptions): DynamicModule {
    // What follows from the settings and the catalog alone (the served models, their backends' options) is
    // resolved here, before Nest builds anything: a bad WORKER_MODELS or backend option is a ConfigError
    // the caller reports in one clear line, rather than a provider failure Nest logs with its stack first.
    const served = selectServedModels(catalog, kind, config.models);
    const capacity = WorkerCapacity.of(kind, config);
    const backends = ServedBackends.create(
      kind,
      served,
      {
        simChatTtftMs: config.simChatTtftMs,
        simChatTokensPerS: config.simChatTokensPerS,
        simImageLatencyMs: config.simImageLatencyMs,
        concurrency: capacity.concurrency,
        environment: config.environment,
        catalogDir: dirname(resolve(config.catalogPath)),
      },
      logger,
    );
    return {
      module: WorkerModule,
      providers: [
        { provide: WORKER_KIND, useValue: kind },
        { provide: WorkerConfig, useValue: config },
        { provide: WORKER_CATALOG, useValue: catalog },
        { provide: WORKER_LOGGER, useValue: logger },
        { provide: SERVED_MODELS, useValue: served },
        { provide: WorkerCapacity, useValue: capacity },
        { provide: ServedBackends, useValue: backends },
        ...modelProviders,
        ...connectionProviders,
        ...jobProviders,
        ...observabilityProviders,
        ...registryProviders,
        WorkerLifecycle,
      ],
    };
  }
}
