import {
  Inject,
  Injectable,
  type LoggerService,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { WorkerConfig } from '@mgw/config';
import type { MetricsServer } from '@mgw/observability';
import { EmbeddingBatchers } from './embedding/embedding-batchers';
import { JobConsumption } from './job-consumption';
import { ServedBackends } from './served-backends';
import { WorkerCapacity } from './worker.capacity';
import { WorkerConnections } from './worker-connections.service';
import { WorkerRegistration } from './worker.registration';
import { METRICS_SERVER, WORKER_LOGGER } from './worker.tokens';

/**
 * Starts and stops a worker in order. Each step belongs to the provider that owns it; the order lives here,
 * in one place, because Nest runs the hooks of one module's providers concurrently.
 *
 * Start: metrics port (so /healthz answers while models load) → backends loaded → Redis ready → jobs
 * consumed (control channel, upstream pools, queues) → registered. The registry never lists a model this
 * process cannot answer yet, and a job never starts before its cancels can be heard.
 *
 * Stop: leave the registry (gateways stop sending work here) → drain → close the embedding batchers, the registry client, the
 * backends, the connections → the metrics port last.
 */
@Injectable()
export class WorkerLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    @Inject(WorkerConfig) private readonly config: WorkerConfig,
    @Inject(WORKER_LOGGER) private readonly logger: LoggerService,
    @Inject(WorkerCapacity) private readonly capacity: WorkerCapacity,
    @Inject(METRICS_SERVER) private readonly metricsServer: MetricsServer | null,
    @Inject(ServedBackends) private readonly backends: ServedBackends,
    @Inject(WorkerConnections) private readonly connections: WorkerConnections,
    @Inject(JobConsumption) private readonly consumption: JobConsumption,
    @Inject(WorkerRegistration) private readonly registration: WorkerRegistration,
    @Inject(EmbeddingBatchers) private readonly batchers: EmbeddingBatchers,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.metricsServer?.start();
    await this.backends.load();
    await this.connections.ready();
    await this.consumption.start();
    await this.registration.start();
    const models = this.backends.all.map((b) => b.model.id).join(', ');
    this.logger.log(
      `worker ${this.config.instanceId} serving ${models} (concurrency ${this.capacity.concurrency})`,
    );
  }

  async onApplicationShutdown(): Promise<void> {
    await this.registration.leave();
    await this.consumption.drain();
    await this.batchers.close();
    await this.registration.close();
    await this.backends.close();
    await this.connections.close();
    await this.metricsServer?.stop();
  }
}
