import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { RouteOptions } from 'fastify';
import { createGatewayApp } from '@mgw/api';
import { danglingRefs, DOCS_PREFIX, OPENAPI_URL, type OpenApiDocument } from '@mgw/api-docs';
import { loadGatewayConfig } from '@mgw/config';
import {
  StoredCompletionUpdateDto,
  validateChatRequest,
  validateDto,
  validateEmbeddingBody,
  validateImageGenerationBody,
} from '@mgw/contracts';
import { CreateKeyDto, CreateTeamDto, CreateTeamTokenDto, UpdateKeyDto, UpdateTeamDto } from '@mgw/access';
import { createAppLogger } from '@mgw/observability';
import { OpenApiSchemas } from '../../../test/fixtures/openapi-schemas';
import { GatewayModule } from './gateway.module';

/**
 * Routes the gateway serves that the API document does not describe, on purpose: static files — the
 * document itself, its reference page and the web console. Keep this list short: any other route must be
 * documented.
 */
const UNDOCUMENTED_ROUTES: ReadonlySet<string> = new Set([
  `GET ${OPENAPI_URL}`,
  `GET ${DOCS_PREFIX}`,
  `GET ${DOCS_PREFIX}/*`,
  'GET /console',
  'GET /console/*',
]);

const DOCS_URL = 'https://code.example.org/platform/model-gateway/-/blob/main/docs/README.md';

/** Operations that take no body, as OpenAI's own (cancelling a background response). */
const BODYLESS_OPERATIONS: ReadonlySet<string> = new Set([
  'post /v1/responses/{id}/cancel',
  'post /v1/batches/{id}/cancel',
]);
const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** `/v1/models/:id` → `/v1/models/{id}`, as OpenAPI writes path parameters. */
const openApiPath = (url: string): string => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

/** Runs the validator (an ES module) in a child process, as its CLI would, on the document given on stdin. */
function validateWithOpenApiValidator(document: unknown): Promise<{ valid: boolean; errors?: unknown }> {
  const script = `
    import { Validator } from '@seriousme/openapi-schema-validator';
    let input = '';
    process.stdin.on('data', (chunk) => (input += chunk)).on('end', async () => {
      const validator = new Validator();
      const result = await validator.validate(JSON.parse(input));
      process.stdout.write(JSON.stringify({ ...result, version: validator.version }));
    });`;
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      ['--input-type=module', '-e', script],
      { cwd: process.cwd() },
      (error, stdout) => {
        if (error) reject(new Error(`the validator failed: ${error.message}`));
        else resolve(JSON.parse(stdout) as { valid: boolean });
      },
    );
    child.stdin!.end(JSON.stringify(document));
  });
}

describe('the API document (GET /openapi.json) against the routes the gateway serves', () => {
  const prefix = `oa-${randomBytes(4).toString('hex')}`;
  const routes: Array<{ method: string; url: string; config: unknown }> = [];
  let app: NestFastifyApplication;
  let document: OpenApiDocument;

  beforeAll(async () => {
    const config = loadGatewayConfig({
      NODE_ENV: 'test',
      KEY_PREFIX: prefix,
      LOG_LEVEL: 'error',
      GATEWAY_API_KEYS: 'sk-openapi-test-key',
      GATEWAY_ADMIN_TOKEN: 'admin-token-for-the-openapi-test',
      DOCS_URL: DOCS_URL,
    });
    const onRoute = (route: RouteOptions): void => {
      for (const method of [route.method].flat()) {
        if (method !== 'HEAD') routes.push({ method, url: route.url, config: route.config });
      }
    };
    app = await createGatewayApp(GatewayModule.forRoot(config), config, createAppLogger('gateway', 'error'), {
      onRoute,
    });
    await app.init();
    await app.getHttpAdapter().getInstance().ready();
    const response = await app.inject({ method: 'GET', url: OPENAPI_URL });
    expect(response.statusCode).toBe(200);
    document = response.json<OpenApiDocument>();
  });

  afterAll(async () => {
    await app?.close();
  });

  it('links the guides (DOCS_URL) as its externalDocs, which /docs shows', () => {
    expect(document.externalDocs).toEqual({
      description: 'The guides and client recipes (docs/README.md)',
      url: DOCS_URL,
    });
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(document.openapi).toBe('3.1.0');
    const result = await validateWithOpenApiValidator(document);
    expect(result).toMatchObject({ valid: true, version: '3.1' });
    expect(danglingRefs(document)).toEqual([]);
  });

  it('has JSON Schema 2020-12 schemas that compile strictly (no OpenAPI 3.0 leftovers)', () => {
    const schemas = new OpenApiSchemas(document);
    expect(schemas.names.length).toBeGreaterThan(20);
    for (const name of schemas.names) expect(() => schemas.compile(name)).not.toThrow();
    expect(JSON.stringify(document)).not.toContain('"nullable"');
  });

  it('documents every route the gateway serves, except the short list of its own pages', () => {
    expect(routes.length).toBeGreaterThan(10);
    const undocumented = routes
      .map(({ method, url }) => `${method} ${url}`)
      .filter((route) => !UNDOCUMENTED_ROUTES.has(route))
      .filter((route) => {
        const [method, url] = route.split(' ') as [string, string];
        return document.paths[openApiPath(url)]?.[method.toLowerCase()] === undefined;
      });
    expect(undocumented).toEqual([]);
    // The document's own pages are among the routes, so the table read is the one that serves.
    expect(routes.map(({ method, url }) => `${method} ${url}`)).toEqual(
      expect.arrayContaining([`GET ${OPENAPI_URL}`, `GET ${DOCS_PREFIX}`, `GET ${DOCS_PREFIX}/*`]),
    );
  });

  it('describes no path or operation the gateway does not serve', () => {
    const served = new Set(routes.map(({ method, url }) => `${method.toLowerCase()} ${openApiPath(url)}`));
    const documented = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.keys(operations)
        .filter((key) => HTTP_METHODS.has(key))
        .map((method) => `${method} ${path}`),
    );
    expect(documented.length).toBeGreaterThan(10);
    expect(documented.filter((operation) => !served.has(operation))).toEqual([]);
  });

  it('documents a success answer with its media type and schema, and a body schema, for every operation', () => {
    const lacking: string[] = [];
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (!HTTP_METHODS.has(method)) continue;
        const responses = (operation.responses ?? {}) as Record<
          string,
          { content?: Record<string, { schema?: unknown }> }
        >;
        const success = Object.entries(responses).filter(([status]) => status.startsWith('2'));
        const described = success.some(([, response]) =>
          Object.values(response.content ?? {}).some((media) => media.schema !== undefined),
        );
        if (!described) lacking.push(`${method.toUpperCase()} ${path}: no 2xx response with a schema`);
        if (typeof operation.operationId !== 'string' || typeof operation.summary !== 'string') {
          lacking.push(`${method.toUpperCase()} ${path}: no operationId or summary (@ApiOperation)`);
        }
        if (['post', 'put', 'patch'].includes(method) && !BODYLESS_OPERATIONS.has(`${method} ${path}`)) {
          const body = operation.requestBody as
            { content?: Record<string, { schema?: { $ref?: string; properties?: object } }> } | undefined;
          const json = body?.content?.['application/json']?.schema;
          const ref = json?.$ref;
          // A JSON body by reference or in place (a schema's own JSON Schema), a file upload's form in place.
          const schema: { properties?: object } | undefined =
            ref === undefined
              ? (json ?? body?.content?.['multipart/form-data']?.schema)
              : document.components.schemas[ref.split('/').pop()!];
          // A DTO @nestjs/swagger cannot read becomes an empty object: document it with DtoSchemaBuilder.
          if (Object.keys(schema?.properties ?? {}).length === 0) {
            lacking.push(`${method.toUpperCase()} ${path}: no request body schema with properties`);
          }
        }
      }
    }
    expect(lacking).toEqual([]);
  });

  it("gives each operation the security of its route's auth policy", () => {
    for (const { method, url, config } of routes) {
      const operation = document.paths[openApiPath(url)]?.[method.toLowerCase()];
      if (operation === undefined) continue;
      const policy = (config as { authPolicy?: string } | undefined)?.authPolicy ?? 'required';
      const expected = {
        required: [{ apiKey: [] }],
        models: [{ apiKey: [] }],
        admin: [{ adminToken: [] }],
        'team-admin': [{ adminToken: [] }, { teamAdminToken: [] }],
        public: [],
      }[policy];
      expect({ route: `${method} ${url}`, security: operation.security }).toEqual({
        route: `${method} ${url}`,
        security: expected,
      });
      expect(operation).not.toHaveProperty('x-auth-policy');
    }
    expect(Object.keys(document.components.securitySchemes).sort()).toEqual([
      'adminToken',
      'apiKey',
      'teamAdminToken',
    ]);
  });

  it('documents the error shape on every operation that can fail, and the SSE stream of chat', () => {
    const chat = document.paths['/v1/chat/completions']!.post!;
    const responses = chat.responses as Record<string, { content: Record<string, { schema: unknown }> }>;
    for (const status of ['400', '401', '404', '429', '503', '504']) {
      expect(responses[status]!.content['application/json']!.schema).toEqual({
        $ref: '#/components/schemas/ErrorResponse',
      });
    }
    const stream = responses['200']!.content['text/event-stream'] as { schema: Record<string, unknown> };
    expect(stream.schema['x-event-schema']).toEqual({ $ref: '#/components/schemas/ChatCompletionChunk' });
    expect(stream.schema.description).toContain('data: [DONE]');
    expect(document.components.schemas.ErrorObject!.required).toEqual(['message', 'type', 'param', 'code']);
  });

  it('has examples that its schemas accept, and request examples the validators accept', () => {
    const schemas = new OpenApiSchemas(document);
    const dto =
      (cls: new () => object) =>
      (body: unknown): unknown =>
        validateDto(cls, body);
    const bodies: Record<string, (body: unknown) => unknown> = {
      CreateChatCompletionRequest: validateChatRequest,
      CreateImageRequest: validateImageGenerationBody,
      CreateEmbeddingRequest: validateEmbeddingBody,
      CreateKeyRequest: dto(CreateKeyDto),
      UpdateKeyRequest: dto(UpdateKeyDto),
      CreateTeamRequest: dto(CreateTeamDto),
      UpdateTeamRequest: dto(UpdateTeamDto),
      CreateTeamTokenRequest: dto(CreateTeamTokenDto),
      StoredCompletionUpdateRequest: dto(StoredCompletionUpdateDto),
    };
    let checked = 0;
    for (const operations of Object.values(document.paths)) {
      for (const operation of Object.values(operations)) {
        const body = operation.requestBody as
          | {
              content: Record<
                string,
                { schema: { $ref: string }; examples?: Record<string, { value: unknown }> }
              >;
            }
          | undefined;
        for (const media of Object.values(body?.content ?? {})) {
          // A form described in place (a file upload) has no DTO and no request examples.
          if (media.schema.$ref === undefined) continue;
          const name = media.schema.$ref.split('/').pop()!;
          for (const { value } of Object.values(media.examples ?? {})) {
            expect({ name, problems: schemas.problems(media.schema, value) }).toEqual({ name, problems: [] });
            expect(() => bodies[name]!(value)).not.toThrow();
            checked += 1;
          }
        }
        const responses = operation.responses as Record<string, { content?: Record<string, unknown> }>;
        for (const response of Object.values(responses)) {
          const json = response.content?.['application/json'] as
            { schema: object; example?: unknown } | undefined;
          if (json?.example === undefined) continue;
          expect(schemas.problems(json.schema, json.example)).toEqual([]);
          checked += 1;
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(6);
  });

  it('serves the reference page and its assets publicly, under a strict CSP', async () => {
    const page = await app.inject({ method: 'GET', url: DOCS_PREFIX });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    const csp = page.headers['content-security-policy'] as string;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/script-src[^;]*'unsafe-(inline|eval)'/);
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    const scripts = [...page.body.matchAll(/<script([^>]*)>([^<]*)<\/script>/g)];
    expect(scripts.length).toBeGreaterThanOrEqual(2);
    for (const [, attributes, inline] of scripts) {
      expect(inline!.trim()).toBe('');
      const src = /src="([^"]+)"/.exec(attributes!)![1]!;
      const asset = await app.inject({ method: 'GET', url: src });
      expect({ src, status: asset.statusCode }).toEqual({ src, status: 200 });
      expect(asset.headers['content-type']).toBe('text/javascript; charset=utf-8');
    }
    const init = await app.inject({ method: 'GET', url: `${DOCS_PREFIX}/docs-init.js` });
    expect(init.body).toContain(OPENAPI_URL);
    expect((await app.inject({ method: 'GET', url: `${DOCS_PREFIX}/swagger-ui.css` })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: `${DOCS_PREFIX}/package.json` })).statusCode).toBe(404);
  });
});
