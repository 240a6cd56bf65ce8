import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { GatewayConfig } from '@mgw/config';
import type { SchemaObject } from './json-schema.types';
import { nullableTo31 } from './openapi-31';
import { requestBodySchemas, schemaRequestBodies } from './request-bodies.openapi';
import { RESPONSE_SCHEMAS } from './response.schemas';
import { AUTH_POLICY_EXTENSION, authPolicyOf, type AuthPolicy } from '@mgw/http';

/** The OpenAPI document as JSON (what `/openapi.json` serves). */
export type OpenApiDocument = Record<string, unknown> & {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, SchemaObject>; securitySchemes: Record<string, unknown> };
};

interface Operation {
  [key: string]: unknown;
  security?: Record<string, string[]>[];
  description?: string;
}

const DESCRIPTION = `A gateway to self-served models that speaks the APIs clients already speak: OpenAI's chat
completions (JSON or server-sent events), the Responses API, embeddings, image generation and the model list,
and Anthropic's Messages API, under \`/v1\`; API keys, usage and model status under \`/admin\`.

Errors have OpenAI's shape \`{"error": {"message", "type", "param", "code"}}\` (schema \`ErrorResponse\`), and
Anthropic's on \`/v1/messages\`. Generated at start from the gateway's controllers and the validators of its
request bodies.

Guides — getting started, a recipe per client (Codex, Claude Code, the Agents SDK, the AI SDK, LangChain, the
\`openai\` SDKs, curl), the catalog and backends, keys and limits, deploy and operations — are the
repository's \`docs/\` tree, starting at \`docs/README.md\`.`;

const SECURITY_SCHEMES = {
  apiKey: {
    type: 'http',
    scheme: 'bearer',
    description:
      'An API key: `Authorization: Bearer <API_KEY>` (GATEWAY_API_KEYS, or a key issued by the admin API).',
  },
  adminToken: {
    type: 'http',
    scheme: 'bearer',
    description:
      'The admin token: `Authorization: Bearer <GATEWAY_ADMIN_TOKEN>`. Without one configured the admin routes answer 404.',
  },
  teamAdminToken: {
    type: 'http',
    scheme: 'bearer',
    description:
      "A team's admin token (`sk-gwt-…`, from `POST /admin/teams/{id}/tokens`): its team's keys and its team only.",
  },
} as const;

function securityOf(policy: AuthPolicy, config: GatewayConfig): Record<string, string[]>[] {
  switch (policy) {
    case 'public':
      return [];
    case 'models':
      return config.modelsRequireAuth ? [{ apiKey: [] }] : [];
    case 'admin':
      return [{ adminToken: [] }];
    case 'team-admin':
      return [{ adminToken: [] }, { teamAdminToken: [] }];
    case 'required':
      return [{ apiKey: [] }];
  }
}

/**
 * Builds the OpenAPI 3.1 document once, at start: `@nestjs/swagger` scans the controllers (paths,
 * parameters, operations, responses), the request bodies' schemas are read from their class-validator
 * decorators or zod schemas, the response schemas are typed by the response interfaces, and each operation's `security`
 * follows its route's `@Auth` policy under this configuration. What `@nestjs/swagger` writes the 3.0 way
 * (`nullable`) is rewritten for 3.1.
 */
export function createOpenApiDocument(app: INestApplication, config: GatewayConfig): OpenApiDocument {
  const builder = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Model Gateway API')
    .setDescription(DESCRIPTION)
    .setVersion('1')
    .addTag('Chat')
    .addTag('Images')
    .addTag('Models')
    .addTag('Admin', 'API keys and usage; exists only when GATEWAY_ADMIN_TOKEN is set.')
    .addTag('Operations', 'Probes and metrics; public.');
  if (config.docsUrl !== undefined) {
    builder.setExternalDoc('The guides and client recipes (docs/README.md)', config.docsUrl);
  }
  const base = builder.build();
  const document = nullableTo31(SwaggerModule.createDocument(app, base)) as OpenApiDocument;
  // Ours replace what `@nestjs/swagger` derived from parameter types (empty objects for DTOs it cannot read).
  const derived = document.components?.schemas ?? {};
  document.components = {
    securitySchemes: SECURITY_SCHEMES,
    schemas: { ...derived, ...requestBodySchemas().build(), ...schemaRequestBodies(), ...RESPONSE_SCHEMAS },
  };
  for (const operations of Object.values(document.paths)) {
    for (const operation of Object.values(operations)) {
      const policy = authPolicyOf({ authPolicy: operation[AUTH_POLICY_EXTENSION] });
      delete operation[AUTH_POLICY_EXTENSION];
      operation.security = securityOf(policy, config);
    }
  }
  return document;
}

/** Paths whose schemas reference a schema the document lacks: a broken document (for tests and start). */
export function danglingRefs(document: OpenApiDocument): string[] {
  const missing = new Set<string>();
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (typeof value !== 'object' || value === null) return;
    for (const [key, item] of Object.entries(value)) {
      if (key === '$ref' && typeof item === 'string') {
        const name = item.replace('#/components/schemas/', '');
        if (!(name in document.components.schemas)) missing.add(item);
      } else visit(item);
    }
  };
  visit(document);
  return [...missing];
}
