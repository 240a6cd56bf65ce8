import type { ComponentLogger } from '@mgw/contracts';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface MetricsServerOptions {
  port: number;
  host?: string;
  registry: Registry;
  /** `/readyz` answers 200 while this is true. */
  ready: () => boolean;
}

/**
 * The small HTTP port of processes without an API (workers, registry): `GET /metrics` for Prometheus,
 * `GET /healthz` (the process is up) and `GET /readyz` (it can do its work) for orchestrators.
 */
export class MetricsServer {
  private server: Server | null = null;

  constructor(
    private readonly options: MetricsServerOptions,
    private readonly logger: Pick<ComponentLogger, 'error'>,
  ) {}

  /** Resolves once listening; rejects (e.g. the port is taken) with a message naming METRICS_PORT. */
  async start(): Promise<void> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        this.logger.error(`metrics request failed: ${String(error)}`);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('metrics unavailable\n');
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error: NodeJS.ErrnoException) =>
        reject(
          new Error(`METRICS_PORT ${this.options.port}: cannot listen (${error.code ?? error.message})`),
        ),
      );
      server.listen(this.options.port, this.options.host ?? '0.0.0.0', () => resolve());
    });
    server.on('error', (error) => this.logger.error(`metrics server: ${error.message}`));
    this.server = server;
  }

  get port(): number | null {
    const address = this.server?.address() as AddressInfo | null | undefined;
    return address?.port ?? null;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'content-type': 'text/plain', allow: 'GET, HEAD' }).end('method not allowed\n');
      return;
    }
    switch (path) {
      case '/metrics': {
        const body = await this.options.registry.metrics();
        res.writeHead(200, { 'content-type': this.options.registry.contentType }).end(body);
        return;
      }
      case '/healthz':
        this.json(res, 200, { status: 'ok' });
        return;
      case '/readyz': {
        const ready = this.options.ready();
        this.json(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready' });
        return;
      }
      default:
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  }

  private json(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }
}
