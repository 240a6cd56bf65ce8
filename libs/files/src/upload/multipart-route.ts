import { FASTIFY_ROUTE_CONFIG_METADATA } from '@nestjs/platform-fastify/constants';
import type { FastifyInstance, onRequestHookHandler, RouteOptions } from 'fastify';
import { FileErrors } from '../file.errors';

/**
 * What a multipart form may add to its file: its boundaries and part headers, and a few short fields. A body
 * longer than the file limit and this is refused from its Content-Length, before a byte of it is read.
 */
export const FORM_OVERHEAD_BYTES = 64 * 1024;

/**
 * Marks a handler as taking a multipart upload, read by the handler as it arrives (`readMultipartUpload`).
 * Merged into the route's Fastify config, like `@Auth` (so it goes above a `@RouteConfig` of the handler).
 */
export function MultipartUpload(): MethodDecorator {
  return (_target, _key, descriptor) => {
    const handler = descriptor.value as object;
    const config = Reflect.getMetadata(FASTIFY_ROUTE_CONFIG_METADATA, handler) as object | undefined;
    Reflect.defineMetadata(FASTIFY_ROUTE_CONFIG_METADATA, { ...config, multipartUpload: true }, handler);
  };
}

function isUploadRoute(config: unknown): boolean {
  return (config as { multipartUpload?: unknown } | undefined)?.multipartUpload === true;
}

function appendOnRequest(route: RouteOptions, hook: onRequestHookHandler): void {
  const own = route.onRequest;
  route.onRequest = own === undefined ? [hook] : [...(Array.isArray(own) ? own : [own]), hook];
}

/**
 * Multipart bodies, for the routes marked `@MultipartUpload` only: there the body is left unread for the
 * handler to stream, a body of another type is refused (400) and one too long for the limit is refused (413),
 * both from the headers alone (after authentication, whose hook comes first). Every other route answers a
 * multipart body as any body that is not JSON: 415. Call after `configureGatewayHttp`, before routes exist.
 */
export function acceptMultipartUploads(fastify: FastifyInstance, maxFileBytes: number): void {
  fastify.addContentTypeParser('multipart/form-data', (request, _payload, done) => {
    if (isUploadRoute(request.routeOptions.config)) done(null, undefined);
    else done(FileErrors.unsupportedMediaType(), undefined);
  });
  fastify.addHook('onRoute', (route) => {
    if (!isUploadRoute(route.config)) return;
    appendOnRequest(route, (request, _reply, done) => {
      const type = request.headers['content-type'];
      if (type === undefined || !/^multipart\/form-data\s*;/i.test(type)) {
        return done(FileErrors.notMultipart(type));
      }
      const length = Number(request.headers['content-length']);
      if (Number.isFinite(length) && length > maxFileBytes + FORM_OVERHEAD_BYTES) {
        return done(FileErrors.tooLarge(maxFileBytes));
      }
      done();
    });
  });
}
