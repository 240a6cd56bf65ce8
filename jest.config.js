// Two layers: fast unit specs next to the code, and e2e specs under test/ that start the real apps.
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

const moduleNameMapper = {
  '^@mgw/(access|api|config|contracts|inference|observability|queue|registry|worker)$':
    '<rootDir>/libs/$1/src',
  '^@mgw/testing$': '<rootDir>/test/fixtures',
};

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    {
      displayName: 'unit',
      rootDir: __dirname,
      testEnvironment: 'node',
      setupFiles: ['reflect-metadata'],
      transform: { '^.+\\.ts$': swc },
      moduleNameMapper,
      testMatch: [
        '<rootDir>/libs/**/*.spec.ts',
        '<rootDir>/apps/**/*.spec.ts',
        '<rootDir>/test/unit/**/*.spec.ts',
      ],
    },
    {
      displayName: 'e2e',
      rootDir: __dirname,
      testEnvironment: 'node',
      setupFiles: ['reflect-metadata'],
      transform: { '^.+\\.ts$': swc },
      moduleNameMapper,
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      slowTestThreshold: 30,
    },
  ],
  testTimeout: 60000,
};
