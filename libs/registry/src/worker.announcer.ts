import type { WorkerHeartbeatDto, ComponentLogger } from '@mgw/contracts';
import type { RegistryClient } from './registry.client';

/** Keeps a worker visible in the registry: a heartbeat at start, then every interval; a goodbye at stop. */
export class WorkerAnnouncer {
  private timer: NodeJS.Timeout | undefined;
  private started = false;

  constructor(
    private readonly client: RegistryClient,
    private readonly beat: () => WorkerHeartbeatDto,
    private readonly intervalMs: number,
    private readonly logger: Pick<ComponentLogger, 'warn'>,
  ) {}

  async start(): Promise<void> {
    await this.client.heartbeat(this.beat());
    this.started = true;
    this.timer = setInterval(() => this.announceNow(), this.intervalMs);
  }

  /** A heartbeat now, not at the next interval: what it says changed (a model became ready or not). */
  announceNow(): void {
    if (!this.started) return;
    this.client.heartbeat(this.beat()).catch((error: unknown) => {
      this.logger.warn(`heartbeat failed: ${error instanceof Error ? error.message : String(error)}`);
    });
  }

  async stop(): Promise<void> {
    this.started = false;
    clearInterval(this.timer);
    try {
      await this.client.deregister({ instanceId: this.beat().instanceId });
    } catch {
      // The registry drops silent workers after its TTL anyway.
    }
  }
}
