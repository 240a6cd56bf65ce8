import { hostname } from 'node:os';
import { Inject, Injectable, type LoggerService } from '@nestjs/common';
import { WorkerConfig, type CatalogModel } from '@mgw/config';
import type { WorkerHeartbeatDto } from '@mgw/contracts';
import { RegistryClient, WorkerAnnouncer } from '@mgw/registry';
import { UpstreamPools } from './upstream-pools';
import { WorkerCapacity } from './worker.capacity';
import { WorkerReadiness } from './worker.readiness';
import { SERVED_MODELS, WORKER_LOGGER } from './worker.tokens';

/**
 * Being listed in the registry while serving: the client, the heartbeats (what they say: the served models,
 * each `ready: false` while every upstream of it is out, and the concurrency) and /readyz.
 */
@Injectable()
export class WorkerRegistration {
  readonly client: RegistryClient;
  readonly announcer: WorkerAnnouncer;
  private readonly startedAt = Date.now();

  constructor(
    @Inject(WorkerConfig) private readonly config: WorkerConfig,
    @Inject(SERVED_MODELS) private readonly served: CatalogModel[],
    @Inject(WorkerCapacity) private readonly capacity: WorkerCapacity,
    @Inject(UpstreamPools) private readonly pools: UpstreamPools,
    @Inject(WorkerReadiness) private readonly readiness: WorkerReadiness,
    @Inject(WORKER_LOGGER) logger: LoggerService,
  ) {
    this.client = new RegistryClient(config.redis, config.namespace);
    this.announcer = new WorkerAnnouncer(this.client, () => this.beat(), config.heartbeatIntervalMs, logger);
    // A model whose upstreams all went out (or one came back): the registry hears it now.
    pools.onReadyChange(() => this.announcer.announceNow());
  }

  /** Registers and announces; from here the worker is ready. */
  async start(): Promise<void> {
    await this.client.connect();
    await this.announcer.start();
    this.readiness.serve();
  }

  /** Not ready, and out of the registry: gateways stop sending work here. */
  async leave(): Promise<void> {
    this.readiness.stop();
    await this.announcer.stop();
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  // `ready: false` while every upstream of the model is out: the registry then counts this worker as not
  // serving it, and gateways answer 503 model_unavailable (or use the model's fallbacks).
  private beat(): WorkerHeartbeatDto {
    return {
      instanceId: this.config.instanceId,
      models: this.served.map((m) => ({
        id: m.id,
        type: m.type,
        owned_by: m.ownedBy,
        ...(this.pools.ready(m.id) ? {} : { ready: false }),
      })),
      concurrency: this.capacity.concurrency,
      hostname: hostname(),
      startedAt: this.startedAt,
    };
  }
}
