import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { GatewayConfig } from '@mgw/config';
import { RedisFileCatalog } from './redis-file.catalog';

/** Entries claimed per round of a sweep. */
const SWEEP_BATCH = 100;

/**
 * Removes expired files, and what interrupted uploads left, on an interval (FILES_SWEEP_INTERVAL_MS): no
 * request pays for it. Every gateway sweeps; the catalog's claims give each due file to one of them.
 */
@Injectable()
export class FileExpirySweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Files');
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    @Inject(RedisFileCatalog) private readonly catalog: RedisFileCatalog,
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      this.running ??= this.sweep().finally(() => (this.running = null));
    }, this.config.filesSweepIntervalMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Sweeps until nothing is due (or the gateway stops); never rejects. */
  async sweep(): Promise<void> {
    try {
      let removed = 0;
      let claimed = SWEEP_BATCH;
      while (claimed === SWEEP_BATCH && this.timer !== null) {
        claimed = await this.catalog.sweep(SWEEP_BATCH);
        removed += claimed;
      }
      if (removed > 0) this.logger.log(`removed ${removed} expired or unfinished file(s)`);
    } catch (error) {
      this.logger.warn(
        `the file sweep failed; it runs again in ${this.config.filesSweepIntervalMs} ms: ${String(error)}`,
      );
    }
  }
}
