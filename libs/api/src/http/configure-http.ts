import type { NestFastifyApplication } from '@nestjs/platform-fastify';

/** HTTP behaviour that lives below Nest's routing: which bodies are accepted, and the correlation header. */
export function configureGatewayHttp(app: NestFastifyApplication): void {
  const fastify = app.getHttpAdapter().getInstance();
  // JSON only: any other Content-Type is answered 415 rather than half-parsed.
  fastify.removeContentTypeParser('text/plain');
  fastify.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    done();
  });
}
