import type { WorkerHeartbeatDto, ComponentLogger } from '@mgw/contracts';
import type { RegistryClient } from './registry.client';

/** Keeps a worker visible in the registry: a heartbeat at start, then every interval; a goodbye at stop. */
export class WorkerAnnouncer {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: RegistryClient,
    private readonly beat: () => WorkerHeartbeatDto,
    private readonly intervalMs: number,
    private readonly logger: Pick<ComponentLogger, 'warn'>,
  ) {}

  async start(): Promise<void> {
    await this.client.heartbeat(this.beat());
    this.timer = setInterval(() => {
      this.client.heartbeat(this.beat()).catch((error: unknown) => {
        this.logger.warn(`heartbeat failed: ${error instanceof Error ? error.message : String(error)}`);
      });
    }, this.intervalMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    try {
      await this.client.deregister({ instanceId: this.beat().instanceId });
    } catch {
      // The registry drops silent workers after its TTL anyway.
    }
  }
}
