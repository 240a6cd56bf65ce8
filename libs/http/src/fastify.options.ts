import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyHttpOptions } from 'fastify';
import type { GatewayConfig } from '@mgw/config';
import { GatewayError } from '@mgw/contracts';

/** Request ids are ours (also job ids and completion ids), never taken from the client. */
export function newRequestId(): string {
  return randomUUID().replaceAll('-', '');
}

export function fastifyOptionsFor(config: GatewayConfig): FastifyHttpOptions<Server> {
  return {
    bodyLimit: config.bodyLimitBytes,
    genReqId: newRequestId,
    requestIdHeader: false,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // SSE streams may stay open for as long as a generation takes: only the reading of a request is bounded,
    // its headers here (Node answers 408 through `answerClientError`), its body by the body deadline.
    requestTimeout: 0,
    http: {
      requestTimeout: 0,
      headersTimeout: config.headersTimeoutMs,
      // Node checks the headers deadline on this interval, so it is a fraction of the deadline.
      connectionsCheckingInterval: Math.min(5000, Math.max(250, Math.floor(config.headersTimeoutMs / 4))),
    },
    logger: false,
    clientErrorHandler: answerClientError,
  };
}

/**
 * Requests Node's HTTP parser refuses before any route runs (oversized or malformed headers, bad framing)
 * still get our error shape, then the connection is closed: after a parse error its framing is unknown.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, code, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'request_headers_too_large', 'The request headers are too large.']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request_timeout', 'The request was not received in time.']
        : [400, 'malformed_request', 'The HTTP request could not be parsed.'];
  const body = JSON.stringify(new GatewayError(status, 'invalid_request_error', code, message).toBody());
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
