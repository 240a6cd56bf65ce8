import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { KeyStore } from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import { GatewayError } from '@mgw/contracts';
import { FileCatalog } from '@mgw/files';
import { RedisConnections } from '@mgw/redis';
import { GatewayShutdown } from '@mgw/session';
import { BatchDriver, type DriverDeps, type OwnerBudgets } from './batch.driver';
import { BatchLineExecutor } from './batch-line.executor';
import { BatchMetrics, type DrivenBatches } from './batch.metrics';
import { BatchStore, type PrincipalSnapshot } from './store/batch.store';

/** Batches looked at per claim: the oldest first. */
const CLAIM_SCAN = 100;

/**
 * The batches this gateway drives. Every gateway runs one: each batch has one driver at a time, the holder
 * of its lease in Redis, renewed here every third of `BATCH_LEASE_MS`; a batch whose driver died (its lease
 * expired) is taken over by the next gateway with room, which goes on from the results kept so far. A new
 * batch created here is claimed at once; the others on the renewal ticks.
 */
@Injectable()
export class BatchRunner
  implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown, DrivenBatches
{
  private readonly logger = new Logger('Batches');
  private readonly drivers = new Map<string, BatchDriver>();
  private readonly holder: string;
  private readonly deps: DriverDeps;
  private timer: NodeJS.Timeout | null = null;
  private claiming: Promise<void> | null = null;
  private claimAgain = false;
  private closing = false;

  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(BatchStore) private readonly store: BatchStore,
    @Inject(FileCatalog) catalog: FileCatalog,
    @Inject(BatchLineExecutor) executor: BatchLineExecutor,
    @Inject(BatchMetrics) metrics: BatchMetrics,
    @Inject(RedisConnections) redis: RedisConnections,
    @Inject(KeyStore) private readonly keys: KeyStore,
    @Optional() @Inject(GatewayShutdown) shutdown: GatewayShutdown | null = null,
  ) {
    this.holder = redis.instanceId;
    const logger = this.logger;
    this.deps = {
      store,
      catalog,
      executor,
      metrics,
      window: config.batchWindow,
      maxLines: config.batchMaxLines,
      logger: { warn: (message) => logger.warn(message), error: (message) => logger.error(message) },
      accepting: () => !this.closing && (shutdown === null || shutdown.phase === 'serving'),
      budgets: (owner) => this.budgetsOf(owner),
    };
    metrics.watch(this);
  }

  /** The owner's key's and team's budgets as they are now; a key since deleted has none. */
  private async budgetsOf(owner: PrincipalSnapshot): Promise<OwnerBudgets> {
    if (owner.bootstrap) return { key: null, team: null };
    const record = await this.keys.record(owner.keyId).catch((error: unknown) => {
      if (error instanceof GatewayError && error.status === 404) return null;
      throw error;
    });
    const team = owner.team ? await this.keys.findTeam(owner.team.id) : null;
    return { key: record?.budget ?? null, team: team?.budget ?? null };
  }

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.tick(), Math.max(100, Math.floor(this.config.batchLeaseMs / 3)));
    this.timer.unref();
    this.claim();
  }

  /** The drain: no batch is claimed and no line starts any more; the lines running finish and are kept. */
  beforeApplicationShutdown(): void {
    // The leases are still renewed meanwhile: the lines running here are this gateway's until they end.
    this.closing = true;
  }

  /** Drivers stop where they are and let go of their leases: another gateway (or this one, restarted) goes on. */
  async onApplicationShutdown(): Promise<void> {
    this.closing = true;
    if (this.timer !== null) clearInterval(this.timer);
    const ids = [...this.drivers.keys()];
    for (const driver of this.drivers.values()) driver.stop();
    this.drivers.clear();
    await Promise.all(ids.map((id) => this.store.releaseLease(id, this.holder).catch(() => undefined)));
  }

  /** Looks for batches to drive now (a batch was just created here). */
  claim(): void {
    if (this.closing) return;
    if (this.claiming !== null) {
      this.claimAgain = true;
      return;
    }
    this.claiming = this.claimFree()
      .catch((error: unknown) => this.logger.warn(`looking for batches to drive failed: ${String(error)}`))
      .finally(() => {
        this.claiming = null;
        if (this.claimAgain) {
          this.claimAgain = false;
          this.claim();
        }
      });
  }

  /** The batch was cancelled: its driver here, if any, starts no more lines (the others hear it on renewal). */
  cancelled(batchId: string): void {
    this.drivers.get(batchId)?.cancel();
  }

  waitingByModel(): Map<string, number> {
    const waiting = new Map<string, number>();
    for (const driver of this.drivers.values()) {
      const lines = driver.waitingLines;
      if (lines !== null && lines.model !== '')
        waiting.set(lines.model, (waiting.get(lines.model) ?? 0) + lines.count);
    }
    return waiting;
  }

  oldestCreatedAt(): number | null {
    let oldest: number | null = null;
    for (const driver of this.drivers.values()) {
      const createdAt = driver.waitingLines?.createdAt;
      if (createdAt !== undefined && (oldest === null || createdAt < oldest)) oldest = createdAt;
    }
    return oldest;
  }

  /** How many batches this gateway drives now (for tests and the drain). */
  get driving(): number {
    return this.drivers.size;
  }

  private async tick(): Promise<void> {
    await Promise.all(
      [...this.drivers.values()].map(async (driver) => {
        try {
          driver.observe(await this.store.renewLease(driver.batchId, this.holder));
        } catch (error) {
          // Redis away: the lease may lapse; the driver goes on, and its results are kept once per line.
          this.logger.warn(`batch ${driver.batchId}: lease renewal failed: ${String(error)}`);
        }
      }),
    );
    this.claim();
  }

  private async claimFree(): Promise<void> {
    if (this.drivers.size >= this.config.batchMaxDriven) return;
    const ids = await this.store.running(CLAIM_SCAN);
    for (const id of ids) {
      if (this.closing || this.drivers.size >= this.config.batchMaxDriven) return;
      if (this.drivers.has(id) || !(await this.store.acquireLease(id, this.holder))) continue;
      this.drive(id);
    }
  }

  private drive(batchId: string): void {
    const driver = new BatchDriver(this.deps, batchId);
    this.drivers.set(batchId, driver);
    driver
      .run()
      .catch((error: unknown) => this.logger.error(`batch ${batchId}: its driver failed: ${String(error)}`))
      .finally(() => {
        if (this.drivers.get(batchId) !== driver) return;
        this.drivers.delete(batchId);
        this.store.releaseLease(batchId, this.holder).then(
          () => this.claim(),
          () => undefined,
        );
      });
  }
}
