import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '@mgw/contracts';
import { appendOnRequest } from './route-hooks';

/** Fastify reads no body for these. */
const BODYLESS_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);

const DEADLINE = Symbol('bodyDeadline');

interface WithBodyDeadline {
  [DEADLINE]: NodeJS.Timeout | null;
}

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
}

/**
 * Bounds the reading phase of a request: a body not received completely within `timeoutMs` of the headers
 * is answered `408` and its connection closed, so a body that trickles cannot hold a connection and a
 * parse buffer open. The deadline ends (`endBodyDeadline`) once the body reaches the JSON parser or the
 * response is done; what comes after, a stream as long as a generation, is not bounded by it. A route hook,
 * after authentication: a refused request never starts one, nor does a route without bodies.
 */
export function registerBodyDeadline(fastify: FastifyInstance, timeoutMs: number): void {
  fastify.decorateRequest(DEADLINE, null);
  fastify.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (methods.every((method) => BODYLESS_METHODS.has(method))) return;
    appendOnRequest(route, (request, reply, done) => {
      if (hasBody(request)) {
        const timer = setTimeout(() => answerBodyTimeout(request, reply), timeoutMs);
        (request as unknown as WithBodyDeadline)[DEADLINE] = timer;
      }
      done();
    });
  });
}

/** The body has been read: the deadline no longer applies. */
export function endBodyDeadline(request: FastifyRequest): void {
  const holder = request as unknown as WithBodyDeadline;
  const timer = holder[DEADLINE];
  if (timer === null) return;
  clearTimeout(timer);
  holder[DEADLINE] = null;
}

function answerBodyTimeout(request: FastifyRequest, reply: FastifyReply): void {
  (request as unknown as WithBodyDeadline)[DEADLINE] = null;
  if (reply.sent || reply.raw.headersSent) return;
  const body = JSON.stringify(
    new GatewayError(
      408,
      'invalid_request_error',
      'request_timeout',
      'The request body was not received in time.',
    ).toBody(),
  );
  // Fastify is still waiting for the body: the answer is written directly, and `connection: close` makes
  // Node drop the connection once it is sent (the body reader then ends with the socket).
  reply.hijack();
  reply.raw.writeHead(408, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-request-id': String(request.id),
    connection: 'close',
  });
  reply.raw.end(body);
}
