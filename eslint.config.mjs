// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const LIBS_THROUGH_ALIAS = {
  group: ['**/libs/*/src/**', '../../libs/**', '../../*/src/**', '../../../*/src/**'],
  message: 'Import libs through their @mgw/* alias.',
};

/**
 * A lib's fixtures that test/ needs have an alias (`@mgw/session/fixtures`); a lib's own specs import theirs
 * relatively, and no other lib imports them.
 */
const LIB_FIXTURES = {
  group: ['@mgw/*/fixtures'],
  message: "A lib's fixtures are for its own specs and test/, never another lib.",
};

/**
 * Which lib may import which: the house's arrows, one row per lib under libs/. Anything a row does not
 * name is refused, so a new arrow is a decision written here, not an accident. Read bottom-up: contracts
 * (the shared protocol) → request (the neutral request and the job that carries it) → config → redis
 * (connections, scripts) → observability, access, queue → the worker's side (inference → one lib per
 * backend kind, registry → worker) and the gateway's: HTTP
 * plumbing (http) → the request core (session) → the rooms on it (api-docs, stored-completions, the
 * front-ends, admin, console-assets) → the assembly (api). Apps wire whatever they need; tests and benches reach anything. `@mgw/testing` (test
 * fixtures) is for specs only. A lib's specs and fixtures have exactly their lib's row: what they pin of
 * their lib's interplay with a lib it may not import is tested under test/unit.
 */
const BASE = ['contracts', 'request', 'config', 'tracing', 'observability'];
const FRONT_END = [...BASE, 'redis', 'access', 'http', 'session', 'api-docs', 'registry'];
const ARROWS = {
  contracts: [],
  // The neutral request every front-end makes and the job protocol that carries it to a worker.
  request: ['contracts'],
  // Plumbing for Redis itself: connections by role and topology, pub/sub dispatch, scripts kept in .lua
  // files, expiring slots; below every capability that talks to Redis.
  redis: ['contracts', 'config'],
  config: ['contracts'],
  // OpenTelemetry: the SDK's start (only when an OTLP endpoint is set), trace context across the queue, the
  // GenAI spans; beside observability, whose log lines carry the active trace id.
  tracing: ['contracts', 'config'],
  observability: ['contracts', 'config', 'tracing'],
  access: [...BASE, 'redis'],
  queue: [...BASE, 'redis'],
  // The backends' common ground: their interfaces, the request mapper, text utilities, option reading and
  // the upstream pool a backend may carry (the worker starts it and gates jobs on it).
  inference: [...BASE, 'redis'],
  // One lib per backend kind, each behind inference's interfaces with its provider's quirks inside; a
  // backend never imports another.
  'backend-openai': [...BASE, 'inference'],
  'backend-llamacpp': [...BASE, 'inference'],
  'backend-simulator': [...BASE, 'inference'],
  // What each backend kind honours is contracts' table (backend-parameters.ts), so the registry publishes a
  // model's parameters without loading the backends.
  registry: [...BASE, 'redis', 'queue'],
  // The worker builds a served model's backend by its kind (backend.factory.ts), so it alone sees them all.
  worker: [
    ...BASE,
    'redis',
    'access',
    'queue',
    'inference',
    'backend-openai',
    'backend-llamacpp',
    'backend-simulator',
    'registry',
  ],
  http: [...BASE, 'redis', 'access'],
  session: [...BASE, 'redis', 'access', 'queue', 'registry'],
  'api-docs': [...BASE, 'access', 'http'],
  'stored-completions': [...BASE, 'redis', 'access'],
  'chat-api': [...FRONT_END, 'stored-completions'],
  'images-api': FRONT_END,
  'models-api': FRONT_END,
  // The Responses and Anthropic Messages front-ends sit beside chat-api, reusing the request core and the
  // store, never another front-end.
  'responses-api': [...FRONT_END, 'stored-completions'],
  'anthropic-api': [...FRONT_END, 'stored-completions'],
  'embeddings-api': FRONT_END,
  // The Files API and its object stores (a directory, S3); batches read their input and write their output
  // through its FileCatalog.
  files: [...BASE, 'redis', 'access', 'http', 'api-docs'],
  // A batch line runs through its endpoint's front-end, so batches sit above them.
  batches: [...FRONT_END, 'queue', 'files', 'chat-api', 'responses-api', 'embeddings-api'],
  // The operator's room reads the request core's state through the HTTP layer's ports, never the core itself.
  admin: [...BASE, 'redis', 'access', 'http', 'api-docs', 'registry', 'queue'],
  'console-assets': [...BASE, 'http'],
  api: [
    ...BASE,
    'http',
    'session',
    'api-docs',
    'chat-api',
    'images-api',
    'models-api',
    'responses-api',
    'anthropic-api',
    'embeddings-api',
    'files',
    'batches',
    'admin',
    'console-assets',
  ],
};

function libDirectories() {
  const root = join(import.meta.dirname, 'libs');
  return readdirSync(root).filter((name) => statSync(join(root, name)).isDirectory());
}

/** The table, checked against libs/ and tsconfig.json's aliases, as one no-restricted-imports rule per lib. */
function libArrows() {
  const libs = libDirectories();
  const aliases = JSON.parse(readFileSync(join(import.meta.dirname, 'tsconfig.json'), 'utf8')).compilerOptions
    .paths;
  for (const lib of libs) {
    if (!(lib in ARROWS))
      throw new Error(`eslint.config.mjs: libs/${lib} has no row in ARROWS; say what it may import`);
    if (!aliases[`@mgw/${lib}`]) throw new Error(`tsconfig.json: libs/${lib} has no @mgw/${lib} path alias`);
  }
  const refuse = (files, ignores, lib, also) => ({
    files,
    ignores,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [...libs.filter((other) => other !== lib && !ARROWS[lib].includes(other)), ...also].map(
            (other) => ({
              name: `@mgw/${other}`,
              message: `libs/${lib} may not import @mgw/${other}: see ARROWS in eslint.config.mjs for the direction.`,
            }),
          ),
          patterns: [LIBS_THROUGH_ALIAS, LIB_FIXTURES],
        },
      ],
    },
  });
  const specs = ['**/*.spec.ts', '**/*.fixtures.ts'];
  return libs.flatMap((lib) => [
    refuse([`libs/${lib}/src/**/*.ts`], specs, lib, ['testing']),
    refuse(
      specs.map((spec) => `libs/${lib}/src/${spec}`),
      [],
      lib,
      [],
    ),
  ]);
}

export default tseslint.config(
  { ignores: ['dist/**', 'dist-*/**', 'node_modules/**', 'coverage/**', 'bench/results/**'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Nest needs runtime class references for DI metadata; type-only imports would erase them.
      '@typescript-eslint/no-extraneous-class': 'off',
      'no-restricted-imports': [
        'error',
        {
          patterns: [LIBS_THROUGH_ALIAS],
        },
      ],
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'Read configuration through the validated config in @mgw/config.',
        },
      ],
    },
  },
  ...libArrows(),
  {
    // The browser console shares the admin API's types with the server, type-only (nothing of the server is
    // bundled), from files that import nothing: libs/access/src/admin-api.types.ts and the model status's.
    files: ['apps/console/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              ...LIBS_THROUGH_ALIAS,
              allowTypeImports: true,
              message: 'The console imports server code type-only, from files that import nothing.',
            },
          ],
        },
      ],
    },
  },
  {
    // The entry points hand process.env to the config loader once (tracing.ts, main.ts's first import, to
    // the tracing config); scripts and tests set up child processes.
    files: [
      'apps/*/src/main.ts',
      'apps/*/src/tracing.ts',
      'scripts/**',
      'test/**',
      'bench/**',
      '**/*.spec.ts',
    ],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    // jest's asymmetric matchers (expect.any, expect.objectContaining) are typed `any`, and asserting on a
    // mock's method (`expect(fake.method)`) is how jest is used.
    files: ['test/**', '**/*.spec.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        module: 'writable',
        require: 'readonly',
        __dirname: 'readonly',
        URL: 'readonly',
        Buffer: 'readonly',
      },
    },
  },
);
