import type { Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { GatewayConfig } from '@mgw/config';
import { GatewayError } from '@mgw/contracts';
import { RequestSessions } from '../request-sessions';

/** After the drain, how long error answers get to reach their clients before connections are cut. */
const FLUSH_MS = 2000;

export type ShutdownPhase = 'serving' | 'draining' | 'closed';

/**
 * The gateway's graceful stop, run by Nest on SIGTERM before the HTTP server and Redis are closed:
 * 1. `/readyz` answers 503 (for GATEWAY_SHUTDOWN_DELAY_MS, so load balancers stop routing here);
 * 2. the listener closes: new connections are refused, new requests on open connections get a 503;
 * 3. open requests get GATEWAY_DRAIN_TIMEOUT_MS to finish;
 * 4. those still open then end with the error contract — `data: {"error":…}` + `data: [DONE]` on a
 *    stream, a 503 for a client still waiting — and their jobs are removed or cancelled.
 * Nothing accepted ends without an answer.
 */
@Injectable()
export class GatewayShutdown implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Shutdown');
  private current: ShutdownPhase = 'serving';

  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(RequestSessions) private readonly inflight: RequestSessions,
    @Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost,
  ) {}

  get phase(): ShutdownPhase {
    return this.current;
  }

  get stopping(): boolean {
    return this.current !== 'serving';
  }

  get refusing(): boolean {
    return this.current === 'closed';
  }

  async beforeApplicationShutdown(signal?: string): Promise<void> {
    if (this.current !== 'serving') return;
    this.current = 'draining';
    this.logger.log(`${signal ?? 'shutdown'}: draining ${this.inflight.size} open request(s)`);
    if (this.config.shutdownDelayMs > 0) await sleep(this.config.shutdownDelayMs);
    this.current = 'closed';
    const server = this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined;
    // Fastify closes the server again later and accepts that it is already closed.
    const closed = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    server?.closeIdleConnections();
    if (!(await this.inflight.settled(this.config.drainTimeoutMs))) {
      const ended = this.inflight.failAll(
        GatewayError.serviceUnavailable('The gateway is shutting down. Retry the request.'),
      );
      this.logger.warn(`drain timeout: ended ${ended} open request(s) with 503 service_unavailable`);
      // Queued jobs are being taken back and running ones cancelled; give Redis a moment for that.
      await this.inflight.settled(FLUSH_MS);
    }
    server?.closeIdleConnections();
    await Promise.race([closed, sleep(FLUSH_MS)]);
    server?.closeAllConnections();
  }
}
