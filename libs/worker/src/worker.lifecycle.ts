import {
  Inject,
  Injectable,
  type LoggerService,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { WorkerConfig } from '@mgw/config';
import { GatewayError, type ModelKind } from '@mgw/contracts';
import type { MetricsServer } from '@mgw/observability';
import { CancelListener, JobStopped, ModelQueueConsumer } from '@mgw/queue';
import { WorkerAnnouncer, RegistryClient } from '@mgw/registry';
import { EmbeddingBatchers } from './embedding/embedding-batchers';
import { JobInstrumentation } from './job.instrumentation';
import { JobRunner } from './job-runner';
import type { ModelJobProcessor } from './model-job.processor';
import { ServedBackends } from './served-backends';
import { UpstreamPools } from './upstream-pools';
import { WorkerCapacity } from './worker.capacity';
import { WorkerConnections } from './worker-connections.service';
import { WorkerReadiness } from './worker.readiness';
import { METRICS_SERVER, MODEL_PROCESSORS, WORKER_KIND, WORKER_LOGGER } from './worker.tokens';

/**
 * Starts and stops a worker in order. Each step belongs to the provider that owns it; the order lives here,
 * in one place, because Nest runs the hooks of one module's providers concurrently.
 *
 * Start: metrics port (so /healthz answers while models load) → backends loaded → Redis ready → cancel
 * channel subscribed → upstream pools started → queues consumed → registered. The registry never lists a model this process cannot
 * answer yet, and a job never starts before its cancels can be heard.
 *
 * Stop: leave the registry (gateways stop sending work here) → drain → close the runner, the registry
 * client, the backends, the connections → the metrics port last.
 */
@Injectable()
export class WorkerLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    @Inject(WORKER_KIND) private readonly kind: ModelKind,
    @Inject(WorkerConfig) private readonly config: WorkerConfig,
    @Inject(WORKER_LOGGER) private readonly logger: LoggerService,
    @Inject(WorkerCapacity) private readonly capacity: WorkerCapacity,
    @Inject(METRICS_SERVER) private readonly metricsServer: MetricsServer | null,
    @Inject(ServedBackends) private readonly backends: ServedBackends,
    @Inject(WorkerConnections) private readonly connections: WorkerConnections,
    @Inject(CancelListener) private readonly cancels: CancelListener,
    @Inject(ModelQueueConsumer) private readonly consumer: ModelQueueConsumer,
    @Inject(MODEL_PROCESSORS) private readonly processors: readonly ModelJobProcessor[],
    @Inject(JobInstrumentation) private readonly instrumentation: JobInstrumentation,
    @Inject(JobRunner) private readonly runner: JobRunner,
    @Inject(RegistryClient) private readonly registry: RegistryClient,
    @Inject(WorkerAnnouncer) private readonly announcer: WorkerAnnouncer,
    @Inject(WorkerReadiness) private readonly readiness: WorkerReadiness,
    @Inject(UpstreamPools) private readonly pools: UpstreamPools,
    @Inject(EmbeddingBatchers) private readonly batchers: EmbeddingBatchers,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.metricsServer?.start();
    await this.backends.load();
    await this.connections.ready();
    await this.cancels.start();
    await this.pools.start();
    const { concurrency, fetchers } = this.capacity;
    for (const { model, processor } of this.processors) {
      // An embedding model's backend takes an upstream slot per batched call, not per job.
      const pool = this.kind === 'embedding' ? undefined : this.pools.byModel.get(model);
      if (pool === undefined) {
        this.consumer.consume(this.kind, model, concurrency, fetchers, (job) =>
          this.instrumentation.run(job, model, () => processor.process(job)),
        );
      } else {
        // A job is taken only once an upstream slot is reserved for it (see ModelQueueConsumer.consumeGated).
        this.consumer.consumeGated(this.kind, model, concurrency, fetchers, pool, (job, reservation) =>
          this.instrumentation.run(job, model, () => processor.process(job, reservation?.lease ?? null)),
        );
      }
    }
    await this.registry.connect();
    await this.announcer.start();
    this.readiness.serve();
    this.logger.log(
      `worker ${this.config.instanceId} serving ${this.processors.map((p) => p.model).join(', ')} (concurrency ${concurrency}, ${fetchers} fetchers)`,
    );
  }

  async onApplicationShutdown(): Promise<void> {
    this.readiness.stop();
    await this.announcer.stop();
    await this.drain();
    await this.batchers.close();
    this.pools.stop();
    this.runner.close();
    await this.registry.close();
    await this.backends.close();
    await this.connections.close();
    await this.metricsServer?.stop();
  }

  /**
   * Stops taking jobs and lets running ones finish for up to WORKER_DRAIN_TIMEOUT_MS; jobs still running
   * then are stopped and their clients get a 503 they can retry, instead of a stream cut without a word.
   */
  private async drain(): Promise<void> {
    const closed = this.consumer.close();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      closed.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(resolve, this.config.drainTimeoutMs, true))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      const stopped = this.cancels.abortAll(
        new JobStopped({
          kind: 'worker_stopping',
          error: GatewayError.serviceUnavailable(
            'The model worker shut down before finishing. Retry the request.',
          ),
        }),
      );
      this.logger.warn(`drain timeout: stopped ${stopped} running job(s)`);
      await closed;
    }
  }
}
