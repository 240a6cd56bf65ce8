import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { GatewayConfig } from '@mgw/config';
import { GatewayError } from '@mgw/contracts';
import { inspectJson, MAX_JSON_DEPTH } from './json-body.inspector';
import { type AccessLog, GatewayMetrics } from '@mgw/observability';
import { RequestAuthenticator } from './auth/request.authenticator';
import { authenticateRoutes } from './auth/route-authentication';
import { endBodyDeadline, registerBodyDeadline } from './body-deadline';
import { errorShapeOf } from './errors/error-shape';
import { ServingPhase } from './serving.phase';

const apiKeyAsBearer = (key: string | string[] | undefined): string | undefined =>
  typeof key === 'string' ? `Bearer ${key}` : undefined;

/** Methods whose requests carry a body by their meaning; on the others an empty JSON body is no body. */
const BODY_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH']);

/**
 * HTTP behaviour that lives below Nest's routing: which bodies are accepted, the correlation header,
 * per-request metrics and the access log line (recorded when the response closes — streams included), the
 * refusal of requests that arrive on an open connection once the gateway is shutting down, authentication
 * from the headers alone (before any body byte is read: a refused request costs no read and no parse), and
 * the deadline on reading the body.
 *
 * The gateway's lines about a request name it with a `requestId` field where they are written, rather
 * than through an AsyncLocalStorage context: that would switch on async hooks for every promise of every
 * request, ~6 % of the gateway's CPU on GET /v1/models, for the few lines written inside a request.
 */
export function configureGatewayHttp(app: NestFastifyApplication, accessLog: AccessLog): void {
  const fastify = app.getHttpAdapter().getInstance();
  const metrics = app.get(GatewayMetrics);
  const serving = app.get(ServingPhase);
  const authenticator = app.get(RequestAuthenticator);
  const config = app.get(GatewayConfig);
  // JSON only: any other Content-Type is answered 415 rather than half-parsed.
  fastify.removeContentTypeParser('text/plain');
  // Fastify's own JSON parser (with its prototype-poisoning checks), plus a bound on nesting depth and a
  // refusal of prototype-related keys, which no field of ours has.
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  fastify.removeContentTypeParser('application/json');
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    endBodyDeadline(request);
    // Many clients send `Content-Type: application/json` on every request, a DELETE without a body too.
    if ((body as string).length === 0 && !BODY_METHODS.has(request.method)) return done(null, undefined);
    void parseJson(request, body as string, (error, value: unknown) => {
      if (error) return done(error);
      const problem = inspectJson(value);
      if (problem?.kind === 'too_deep') {
        return done(
          GatewayError.invalidRequest(
            `The JSON body nests deeper than ${MAX_JSON_DEPTH} levels.`,
            null,
            'invalid_json',
          ),
        );
      }
      if (problem?.kind === 'prototype_key') {
        return done(
          GatewayError.invalidRequest(`Unrecognized request argument supplied: ${problem.key}`, problem.key),
        );
      }
      done(null, value);
    });
  });
  fastify.addHook('onRequest', (request, reply, done) => {
    const receivedAt = performance.now();
    void reply.header('x-request-id', request.id);
    metrics.requestReceived(request.id);
    reply.raw.once('close', () => {
      endBodyDeadline(request);
      const status = reply.raw.statusCode;
      metrics.requestFinished(request.id, request.routeOptions.url, request.method, status);
      accessLog.requestFinished({
        requestId: request.id,
        method: request.method,
        url: request.url,
        status,
        durationMs: performance.now() - receivedAt,
        // A key sent in `x-api-key` (Anthropic's clients) is fingerprinted as its Bearer form would be.
        authorization: request.headers.authorization ?? apiKeyAsBearer(request.headers['x-api-key']),
      });
    });
    done();
  });
  // Callback style: an async hook would cost every request a promise for a check that is almost always false.
  fastify.addHook('onRequest', (request, reply, done) => {
    if (!serving.refusing) return done();
    metrics.rejected('unavailable');
    const error = GatewayError.serviceUnavailable('The gateway is shutting down. Retry the request.');
    // In the route's protocol (Anthropic's 529 on the Messages API), OpenAI's elsewhere.
    const shape = errorShapeOf(request.routeOptions?.config);
    void reply
      .status(shape?.statusOf(error) ?? error.status)
      .headers({ ...error.headers, ...shape?.headersOf?.(request.id), connection: 'close' })
      .send(shape === undefined ? error.toBody() : shape.bodyOf(error));
  });
  // Per-route hooks, bound when Nest registers the routes (at `init`/`listen`, which comes after this).
  authenticateRoutes(fastify, authenticator);
  registerBodyDeadline(fastify, config.bodyTimeoutMs);
}
