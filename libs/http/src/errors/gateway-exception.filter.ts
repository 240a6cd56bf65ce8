import {
  Catch,
  HttpException,
  Inject,
  Logger,
  type ArgumentsHost,
  type ExceptionFilter,
} from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '@mgw/contracts';
import { GatewayMetrics, rejectionReasonOf } from '@mgw/observability';
import { isRedisUnavailable } from '@mgw/redis';
import { discardUnreadBody } from '../unread-body';
import { errorShapeOf, type ErrorShape } from './error-shape';

/**
 * How a body that is not JSON is refused, before the parser's own words (OpenAI's phrase); a protocol with
 * its own phrase swaps it (`invalid_json` is the error's code).
 */
export const INVALID_JSON_PREFIX = 'We could not parse the JSON body of your request: ';

/** Framework errors (routing, body parsing, size limits) in the OpenAI vocabulary. */
function fromHttpException(exception: HttpException, request: FastifyRequest): GatewayError {
  const status = exception.getStatus();
  switch (status) {
    case 404:
      return new GatewayError(
        404,
        'invalid_request_error',
        'unknown_url',
        `Unknown request URL: ${request.method} ${request.url.split('?')[0]}.`,
      );
    case 405:
      return new GatewayError(
        405,
        'invalid_request_error',
        'method_not_allowed',
        `Method ${request.method} is not allowed here.`,
      );
    case 413:
      return new GatewayError(
        413,
        'invalid_request_error',
        'request_too_large',
        'The request body is too large.',
      );
    case 415:
      return new GatewayError(
        415,
        'invalid_request_error',
        'unsupported_media_type',
        "Unsupported Content-Type: send the body as JSON with 'Content-Type: application/json'.",
      );
    case 400:
      return GatewayError.invalidRequest(`${INVALID_JSON_PREFIX}${exception.message}`, null, 'invalid_json');
    default:
      return new GatewayError(
        status,
        status >= 500 ? 'server_error' : 'invalid_request_error',
        null,
        exception.message,
      );
  }
}

/**
 * The exit for errors: every failure leaves in its protocol's error shape with the right status. Unknown
 * errors become an opaque 500 whose request id is also in the log line with the stack. The gateway-wide
 * filter is `OpenAiExceptionFilter`; a front-end whose protocol has another shape declares it on its routes
 * with `@ErrorsShapedAs(shape)`, which this filter follows for every error of those routes — also those
 * raised before the handler (authentication, the body), which no route-bound filter sees. So the request
 * core raises `GatewayError`s and never formats an error body.
 */
export abstract class GatewayExceptionFilter implements ExceptionFilter, ErrorShape {
  private readonly logger = new Logger('Errors');

  constructor(@Inject(GatewayMetrics) private readonly metrics: GatewayMetrics) {}

  /** The response body of `error` in this protocol's shape. */
  abstract bodyOf(error: GatewayError): unknown;

  statusOf(error: GatewayError): number {
    return error.status;
  }

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const request = http.getRequest<FastifyRequest>();
    const requestId = String(request.id);
    if (reply.sent || reply.raw.headersSent || reply.raw.destroyed) return; // nobody left to tell
    let error: GatewayError;
    if (exception instanceof GatewayError) error = exception;
    else if (exception instanceof HttpException) error = fromHttpException(exception, request);
    else if (isRedisUnavailable(exception)) {
      // A route that reads Redis while it fails over or is gone: a 503 to retry, not a bug's 500.
      this.logger.warn({ msg: `request ${requestId}: Redis unavailable: ${String(exception)}`, requestId });
      error = GatewayError.serviceUnavailable('Redis is not reachable. Try again shortly.');
    } else {
      this.logger.error({
        msg: `request ${requestId} failed: ${exception instanceof Error ? (exception.stack ?? exception.message) : String(exception)}`,
        requestId,
      });
      error = GatewayError.internal(requestId);
    }
    const rejection = rejectionReasonOf(error.status, error.code);
    if (rejection) this.metrics.rejected(rejection);
    discardUnreadBody(request, reply);
    const shape: ErrorShape = errorShapeOf(request.routeOptions?.config) ?? this;
    // Fastify's reply is thenable; send() completes the response itself and has nothing to await.
    void reply
      .status(shape.statusOf(error))
      .headers({ ...error.headers, ...shape.headersOf?.(requestId), 'x-request-id': requestId })
      .send(shape.bodyOf(error));
  }
}

/** The OpenAI error shape, `{"error":{message,type,param,code}}`: the gateway's default. */
@Catch()
export class OpenAiExceptionFilter extends GatewayExceptionFilter {
  bodyOf(error: GatewayError): unknown {
    return error.toBody();
  }
}
