import { dirname } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { GatewayConfig } from '@mgw/config';
import {
  DOCS_CSP,
  DOCS_INDEX_HTML,
  DOCS_INIT_JS,
  DOCS_PREFIX,
  OPENAPI_URL,
  SWAGGER_UI_FILES,
} from './docs-page';
import { createOpenApiDocument, type OpenApiDocument } from './openapi.document';
import { serveStaticFile, serveStaticSite } from '@mgw/http';

/**
 * `GET /openapi.json` (the document, built once here) and `GET /docs` (Swagger UI), both public like
 * `/healthz`: the document holds no secret, and every operation it describes still needs its credential.
 * Call before the server listens.
 */
export async function serveApiDocs(app: NestFastifyApplication): Promise<OpenApiDocument> {
  const document = createOpenApiDocument(app, app.get(GatewayConfig));
  const fastify = app.getHttpAdapter().getInstance();
  serveStaticFile(fastify, OPENAPI_URL, {
    name: 'openapi.json',
    body: JSON.stringify(document),
    csp: "default-src 'none'; frame-ancestors 'none'",
  });
  await serveStaticSite(fastify, {
    prefix: DOCS_PREFIX,
    root: swaggerUiDirectory(),
    csp: DOCS_CSP,
    include: (path) => SWAGGER_UI_FILES.has(path),
    pages: { 'index.html': DOCS_INDEX_HTML, 'docs-init.js': DOCS_INIT_JS },
  });
  return document;
}

/** swagger-ui-dist as `@nestjs/swagger` (which depends on it) finds it, wherever npm put it. */
function swaggerUiDirectory(): string {
  const from = dirname(require.resolve('@nestjs/swagger'));
  return dirname(require.resolve('swagger-ui-dist/package.json', { paths: [from] }));
}
