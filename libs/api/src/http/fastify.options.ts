import { randomUUID } from 'node:crypto';
import type { FastifyServerOptions } from 'fastify';
import type { GatewayConfig } from '@mgw/config';

/** Request ids are ours (also job ids and completion ids), never taken from the client. */
export function newRequestId(): string {
  return randomUUID().replaceAll('-', '');
}

export function fastifyOptionsFor(config: GatewayConfig): FastifyServerOptions {
  return {
    bodyLimit: config.bodyLimitBytes,
    genReqId: newRequestId,
    requestIdHeader: false,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // SSE streams may stay open for as long as a generation takes.
    requestTimeout: 0,
    logger: false,
  };
}
