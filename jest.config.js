// Three layers: unit specs next to the code (no Redis, no network), integration specs next to the code that
// talk to the real Redis at 127.0.0.1:6379 (`*.integration.spec.ts`), and e2e specs under test/ that start
// the real apps as processes.
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
    },
    module: { type: 'commonjs' },
  },
];

// node_modules go through esm-modules.transform.mjs (ES modules compiled to CommonJS, the rest untouched).
const transform = {
  '^.+\\.ts$': swc,
  '/node_modules/.+\\.m?js$': '<rootDir>/test/support/esm-modules.transform.mjs',
};
const transformIgnorePatterns = ['\\.pnp\\.[^\\/]+$'];

// The @mgw/* aliases as tsconfig.json spells them (one list for tsc, tsc-alias, madge, ESLint and jest).
const { readFileSync } = require('node:fs'); // eslint-disable-line @typescript-eslint/no-require-imports
const { paths } = JSON.parse(readFileSync(`${__dirname}/tsconfig.json`, 'utf8')).compilerOptions;
const moduleNameMapper = Object.fromEntries(
  Object.entries(paths).map(([alias, [target]]) => [
    `^${alias}$`,
    `<rootDir>/${target.replace(/^\.\//, '')}`,
  ]),
);

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    {
      displayName: 'unit',
      rootDir: __dirname,
      testEnvironment: 'node',
      // Refuses any connection to Redis, so a spec that needs it fails here instead of passing by luck.
      setupFiles: ['reflect-metadata'],
      // After the framework is up: the guard is installed per file and removed again (see the file).
      setupFilesAfterEnv: ['<rootDir>/test/support/no-redis.setup.ts'],
      transform,
      transformIgnorePatterns,
      moduleNameMapper,
      testMatch: [
        '<rootDir>/libs/**/*.spec.ts',
        '<rootDir>/apps/**/*.spec.ts',
        '<rootDir>/test/unit/**/*.spec.ts',
      ],
      testPathIgnorePatterns: ['/node_modules/', '\\.integration\\.spec\\.ts$'],
    },
    {
      displayName: 'integration',
      rootDir: __dirname,
      testEnvironment: 'node',
      setupFiles: ['reflect-metadata'],
      transform,
      transformIgnorePatterns,
      moduleNameMapper,
      testMatch: ['<rootDir>/libs/**/*.integration.spec.ts', '<rootDir>/apps/**/*.integration.spec.ts'],
    },
    {
      displayName: 'e2e',
      rootDir: __dirname,
      testEnvironment: 'node',
      setupFiles: ['reflect-metadata'],
      transform,
      transformIgnorePatterns,
      moduleNameMapper,
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      slowTestThreshold: 30,
    },
  ],
  // A skipped or todo test fails the run (see the reporter).
  reporters: ['default', '<rootDir>/test/support/skipped-tests.reporter.mjs'],
  testTimeout: 60000,
};
