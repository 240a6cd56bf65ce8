import { dirname, resolve } from 'node:path';
import { Module, type DynamicModule, type LoggerService, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import type { Redis } from 'ioredis';
import { UsageRecorder } from '@mgw/access';
import { WorkerConfig, type Catalog, type CatalogModel } from '@mgw/config';
import { controlChannelFor, type ModelKind } from '@mgw/contracts';
import type { BackendSettings } from '@mgw/inference';
import { MetricsServer, WorkerMetrics } from '@mgw/observability';
import { ControlListener, ModelQueueConsumer, ReplyBatcher, SubscriberBacklogMonitor } from '@mgw/queue';
import { PubSubDispatcher } from '@mgw/redis';
import { TracingShutdown } from '@mgw/tracing';
import { ChatJobProcessor } from './chat-job.processor';
import { EmbeddingBatchers } from './embedding/embedding-batchers';
import { EmbeddingJobProcessor } from './embedding/embedding-job.processor';
import { ImageJobProcessor } from './image-job.processor';
import { JobConsumption } from './job-consumption';
import { JobHandlers } from './job-handlers.explorer';
import { JobInstrumentation } from './job.instrumentation';
import { JobRunner } from './job-runner';
import { ServedBackends } from './served-backends';
import { selectServedModels } from './served-models';
import { UpstreamPools } from './upstream-pools';
import { UsageReporter } from './usage.reporter';
import { WorkerCapacity } from './worker.capacity';
import { WorkerConnections } from './worker-connections.service';
import { WorkerLifecycle } from './worker.lifecycle';
import { WorkerReadiness } from './worker.readiness';
import { WorkerRegistration } from './worker.registration';
import {
  BACKEND_SETTINGS,
  METRICS_SERVER,
  PUBLISHER_CONNECTION,
  QUEUE_CONNECTION,
  SERVED_MODELS,
  SUBSCRIBER_CONNECTION,
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

/** The Redis connections, all owned (opened, awaited, closed) by WorkerConnections. */
const connectionProviders: Provider[] = [
  WorkerConnections,
  {
    provide: PUBLISHER_CONNECTION,
    useFactory: (connections: WorkerConnections) => connections.publisher,
    inject: [WorkerConnections],
  },
  {
    provide: SUBSCRIBER_CONNECTION,
    useFactory: (connections: WorkerConnections) => connections.subscriber,
    inject: [WorkerConnections],
  },
  {
    provide: QUEUE_CONNECTION,
    useFactory: (connections: WorkerConnections) => connections.blocking,
    inject: [WorkerConnections],
  },
];

/** The queue lib's plain classes (shared with the gateway, so not Nest-decorated), built from the settings. */
const queueProviders: Provider[] = [
  {
    // The one owner of the subscriber connection's listeners: the control channel, the upstream pools' channels.
    provide: PubSubDispatcher,
    useFactory: (subscriber: Redis) => new PubSubDispatcher(subscriber),
    inject: [SUBSCRIBER_CONNECTION],
  },
  {
    provide: ControlListener,
    useFactory: (dispatcher: PubSubDispatcher, config: WorkerConfig, logger: LoggerService) =>
      new ControlListener(dispatcher, controlChannelFor(config.namespace, config.instanceId), logger),
    inject: [PubSubDispatcher, WorkerConfig, WORKER_LOGGER],
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
        logger,
      ),
    inject: [PUBLISHER_CONNECTION, WorkerConfig, WORKER_LOGGER],
  },
  {
    provide: ModelQueueConsumer,
    useFactory: (blocking: Redis, config: WorkerConfig, logger: LoggerService) =>
      new ModelQueueConsumer(blocking, config.namespace, logger, config.jobLockMs),
    inject: [QUEUE_CONNECTION, WorkerConfig, WORKER_LOGGER],
  },
];

/** Running jobs: the runner, the `@OnJob` handlers and what finds them, usage, instrumentation. */
const jobProviders: Provider[] = [
  {
    provide: JobRunner,
    useFactory: (
      batcher: ReplyBatcher,
      control: ControlListener,
      config: WorkerConfig,
      logger: LoggerService,
      metrics: WorkerMetrics,
      kind: ModelKind,
    ) =>
      new JobRunner(
        batcher,
        control,
        config.instanceId,
        logger,
        { heartbeatMs: config.replyHeartbeatMs, namespace: config.namespace, kind },
        (model) => metrics.observerFor(model),
      ),
    inject: [ReplyBatcher, ControlListener, WorkerConfig, WORKER_LOGGER, WorkerMetrics, WORKER_KIND],
  },
  {
    provide: UsageReporter,
    useFactory: (
      publisher: Redis,
      config: WorkerConfig,
      kind: ModelKind,
      logger: LoggerService,
      catalog: Catalog,
      metrics: WorkerMetrics,
    ) => {
      const prices = new Map(catalog.models.map((model) => [model.id, model.pricing]));
      return new UsageReporter(
        new UsageRecorder(publisher, config.namespace, kind),
        logger,
        undefined,
        { kind, of: (model) => prices.get(model) },
        (subject, amounts) =>
          metrics.usageRecorded(subject.model, subject.teamId, {
            promptTokens: amounts.promptTokens,
            completionTokens: amounts.completionTokens,
            costMicros: amounts.cost ?? 0,
          }),
      );
    },
    inject: [PUBLISHER_CONNECTION, WorkerConfig, WORKER_KIND, WORKER_LOGGER, WORKER_CATALOG, WorkerMetrics],
  },
  ChatJobProcessor,
  ImageJobProcessor,
  EmbeddingJobProcessor,
  {
    // Embedding models' inputs gathered into batched backend calls (none for other kinds).
    provide: EmbeddingBatchers,
    useFactory: (backends: ServedBackends, publisher: Redis, config: WorkerConfig, metrics: WorkerMetrics) =>
      new EmbeddingBatchers(backends, publisher, config, metrics),
    inject: [ServedBackends, PUBLISHER_CONNECTION, WorkerConfig, WorkerMetrics],
  },
  JobHandlers,
  JobInstrumentation,
  ServedBackends,
  UpstreamPools,
  JobConsumption,
];

/** Metrics, the metrics/health port (none when METRICS_PORT is 0), readiness and registration. */
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
  WorkerRegistration,
];

/**
 * A worker process for one model kind: consumes its models' queues, runs inference, publishes replies, and
 * keeps itself registered. The app supplies config, catalog and logger (see bootstrapWorker); job handlers
 * are the providers' `@OnJob` methods, found by discovery; WorkerLifecycle starts and stops the rest in order.
 */
@Module({})
export class WorkerModule {
  static forRoot({ kind, config, catalog, logger }: WorkerModuleOptions): DynamicModule {
    // What follows from the settings and the catalog alone (the served models, their backends' options) is
    // checked here, before Nest builds anything: a bad WORKER_MODELS or backend option is a ConfigError
    // the caller reports in one clear line, rather than a provider failure Nest logs with its stack first.
    const served = selectServedModels(catalog, kind, config.models);
    const capacity = WorkerCapacity.of(kind, config);
    const settings: BackendSettings = {
      simChatTtftMs: config.simChatTtftMs,
      simChatTokensPerS: config.simChatTokensPerS,
      simImageLatencyMs: config.simImageLatencyMs,
      concurrency: capacity.concurrency,
      environment: config.environment,
      catalogDir: dirname(resolve(config.catalogPath)),
    };
    ServedBackends.check(kind, served, settings);
    return {
      module: WorkerModule,
      imports: [DiscoveryModule],
      providers: [
        { provide: WORKER_KIND, useValue: kind },
        { provide: WorkerConfig, useValue: config },
        { provide: WORKER_CATALOG, useValue: catalog },
        { provide: WORKER_LOGGER, useValue: logger },
        { provide: SERVED_MODELS, useValue: served },
        { provide: WorkerCapacity, useValue: capacity },
        { provide: BACKEND_SETTINGS, useValue: settings },
        ...connectionProviders,
        ...queueProviders,
        ...jobProviders,
        ...observabilityProviders,
        WorkerLifecycle,
        // Last: its hook exports the spans the others' hooks ended.
        TracingShutdown,
      ],
    };
  }
}
