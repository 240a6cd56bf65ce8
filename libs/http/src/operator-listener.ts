import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, RouteOptions } from 'fastify';
import type { GatewayConfig } from '@mgw/config';
import { answerClientError, fastifyOptionsFor } from './fastify.options';

/** Which listener a route is served on once the operator listener is on. */
export type ListenerRole = 'api' | 'operator';

/** The route constraint that keeps each route to its listener. */
const LISTENER_CONSTRAINT = 'listener';

/** Marks a request that arrived on the operator listener. */
const OPERATOR = Symbol('operator listener');

type MarkedRequest = IncomingMessage & { [OPERATOR]?: true };

/** After the listener closes, how long an operator request still open gets before its connection is cut. */
const FLUSH_MS = 2000;

/**
 * Where a route belongs: the admin API and `/metrics` are the operator's; the probes and the console are
 * served on both (a load balancer probes the API port, a scraper the operator port; the console's
 * playground works where `/v1` is, its Keys, Usage and Models views where `/admin` is); the rest is the API.
 */
export function listenerOfRoute(url: string): ListenerRole | 'both' {
  if (url === '/metrics' || url === '/admin' || url.startsWith('/admin/')) return 'operator';
  if (url === '/healthz' || url === '/readyz') return 'both';
  if (url === '/console' || url.startsWith('/console/')) return 'both';
  return 'api';
}

const listeners = new WeakMap<FastifyInstance, OperatorListener>();

/**
 * A second listener (ADMIN_PORT, ADMIN_HOST) for the operator's routes, so that an ingress can expose only
 * the API port. Both listeners feed the same Fastify instance, hence the same Nest modules, hooks, metrics
 * and shutdown phase; a route constraint derived from the listener a request arrived on keeps each route to
 * its side, so an operator route asked on the API port (and an API route on the operator port) is the
 * router's ordinary 404. Installed before the routes are registered; listens after the API listener; closes
 * with the application.
 */
export class OperatorListener {
  private readonly server: Server;

  private constructor(
    private readonly fastify: FastifyInstance,
    private readonly port: number,
    private readonly host: string,
    config: GatewayConfig,
  ) {
    const { http } = fastifyOptionsFor(config);
    this.server = createServer(http ?? {}, (request, response) => {
      (request as MarkedRequest)[OPERATOR] = true;
      fastify.routing(request, response);
    });
    this.server.on('clientError', answerClientError);
  }

  /** Splits the routes between two listeners when ADMIN_PORT is set; otherwise changes nothing. */
  static install(fastify: FastifyInstance, config: GatewayConfig): OperatorListener | null {
    if (config.adminPort === undefined) return null;
    const listener = new OperatorListener(fastify, config.adminPort, config.adminHost ?? config.host, config);
    fastify.addConstraintStrategy({
      name: LISTENER_CONSTRAINT,
      storage: <T>() => {
        const routes = new Map<unknown, T>();
        return {
          get: (role: unknown) => routes.get(role) ?? null,
          set: (role: unknown, store: T) => void routes.set(role, store),
        };
      },
      deriveConstraint: (request: IncomingMessage): ListenerRole =>
        (request as MarkedRequest)[OPERATOR] ? 'operator' : 'api',
      // The probes and the console carry no constraint: they match on both listeners.
      mustMatchWhenDerived: false,
    });
    fastify.addHook('onRoute', (route: RouteOptions) => {
      const role = listenerOfRoute(route.url);
      if (role === 'both') return;
      route.constraints = { ...route.constraints, [LISTENER_CONSTRAINT]: role };
    });
    fastify.addHook('onClose', () => listener.close());
    listeners.set(fastify, listener);
    return listener;
  }

  /** The listener installed on `fastify`, if any. */
  static of(fastify: FastifyInstance): OperatorListener | null {
    return listeners.get(fastify) ?? null;
  }

  /** Starts listening; resolves to the address, `http://host:port`. */
  async listen(): Promise<string> {
    this.server.keepAliveTimeout = this.fastify.server.keepAliveTimeout;
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.port, this.host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const { port } = this.server.address() as AddressInfo;
    return `http://${this.host}:${port}`;
  }

  private async close(): Promise<void> {
    if (!this.server.listening) return;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    // Unref'd: a close that finishes sooner leaves no timer holding the process.
    await Promise.race([closed, sleep(FLUSH_MS, undefined, { ref: false })]);
    this.server.closeAllConnections();
    await closed;
  }
}
