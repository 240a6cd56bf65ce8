// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

const LIBS_THROUGH_ALIAS = {
  group: ['**/libs/*/src/**', '../../libs/**'],
  message: 'Import libs through their @mgw/* alias.',
};

/**
 * The gateway's rooms point one way: features (libs/api) → request core (libs/session) → HTTP plumbing
 * (libs/http) → contracts, config, observability (and access, for the auth hooks' key check). A lib may not
 * import a room above it, nor the worker's side.
 */
function gatewayRooms() {
  const refuse = (files, names, why) => ({
    files,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: names.map((name) => ({ name, message: why })),
          patterns: [LIBS_THROUGH_ALIAS],
        },
      ],
    },
  });
  return [
    refuse(
      ['libs/http/src/**/*.ts'],
      ['@mgw/api', '@mgw/session', '@mgw/queue', '@mgw/registry', '@mgw/inference', '@mgw/worker'],
      'libs/http is HTTP plumbing: the request core and the features build on it, not the other way.',
    ),
    refuse(
      ['libs/embeddings-api/src/**/*.ts'],
      ['@mgw/api', '@mgw/inference', '@mgw/worker', '@mgw/queue', '@mgw/registry'],
      'libs/embeddings-api is a front-end: it builds on the request core (libs/session) and the HTTP plumbing, never on another feature lib or the worker side.',
    ),
    refuse(
      ['libs/session/src/**/*.ts'],
      ['@mgw/api', '@mgw/inference', '@mgw/worker'],
      'libs/session is the request core: the features (libs/api) build on it; it never reaches a worker.',
    ),
  ];
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
  ...gatewayRooms(),
  {
    // The entry points hand process.env to the config loader once; scripts and tests set up child processes.
    files: ['apps/*/src/main.ts', 'scripts/**', 'test/**', 'bench/**', '**/*.spec.ts'],
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
