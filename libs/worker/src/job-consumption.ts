import { Inject, Injectable, type LoggerService } from '@nestjs/common';
import { WorkerConfig } from '@mgw/config';
import { DEFAULT_MIN_SHARE, GatewayError, type ModelKind } from '@mgw/contracts';
import { ControlListener, JobStopped, ModelQueueConsumer } from '@mgw/queue';
import { JobHandlers } from './job-handlers.explorer';
import { JobInstrumentation } from './job.instrumentation';
import { JobRunner } from './job-runner';
import { ServedBackends } from './served-backends';
import { UpstreamPools } from './upstream-pools';
import { WorkerCapacity } from './worker.capacity';
import { WORKER_KIND, WORKER_LOGGER } from './worker.tokens';

/**
 * Taking and running jobs: the control channel first (a job never starts before its cancels can be heard),
 * the upstream pools, then one consumer loop per served model, each job run by its kind's `@OnJob` handler
 * (start-up fails when the kind has none). Drains at shutdown.
 */
@Injectable()
export class JobConsumption {
  constructor(
    @Inject(WORKER_KIND) private readonly kind: ModelKind,
    @Inject(WorkerConfig) private readonly config: WorkerConfig,
    @Inject(WorkerCapacity) private readonly capacity: WorkerCapacity,
    @Inject(ServedBackends) private readonly backends: ServedBackends,
    @Inject(JobHandlers) private readonly handlers: JobHandlers,
    @Inject(JobInstrumentation) private readonly instrumentation: JobInstrumentation,
    @Inject(ControlListener) private readonly control: ControlListener,
    @Inject(UpstreamPools) private readonly pools: UpstreamPools,
    @Inject(ModelQueueConsumer) private readonly consumer: ModelQueueConsumer,
    @Inject(JobRunner) private readonly runner: JobRunner,
    @Inject(WORKER_LOGGER) private readonly logger: LoggerService,
  ) {}

  async start(): Promise<void> {
    const handle = this.handlers.handlerFor(this.kind);
    await this.control.start();
    await this.pools.start();
    const { concurrency } = this.capacity;
    for (const { model } of this.backends.all) {
      // A model whose backend has a pool takes a job only once an upstream slot is reserved for it; an
      // embedding model's backend takes an upstream slot per batched call, not per job, so it has no gate.
      const gate = this.kind === 'embedding' ? undefined : this.pools.byModel.get(model.id);
      const minShare = model.minShare ?? DEFAULT_MIN_SHARE;
      this.consumer.consume({ kind: this.kind, model: model.id, concurrency, gate, minShare }, (job) =>
        this.instrumentation.run(job, model.id, () => handle(job, model.id)),
      );
    }
  }

  /**
   * Stops taking jobs and lets running ones finish for up to WORKER_DRAIN_TIMEOUT_MS; jobs still running
   * then are stopped and their clients get a 503 they can retry, instead of a stream cut without a word.
   * Then the pools and the runner stop.
   */
  async drain(): Promise<void> {
    const closed = this.consumer.close();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      closed.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(resolve, this.config.drainTimeoutMs, true))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      const stopped = this.control.abortAll(
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
    this.pools.stop();
    this.runner.close();
  }
}
