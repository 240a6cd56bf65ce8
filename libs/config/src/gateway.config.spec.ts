import { GatewayConfig, loadGatewayConfig } from './gateway.config';
import { ConfigError } from './load-config';

function configError(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadGatewayConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(env)} to be refused`);
}

/** What `openssl rand -hex 32` prints: the kind of key production accepts. */
const STRONG_KEY = 'sk-9c2f4e8a1b7d3f6e0a5c8b2d4f7e1a3c6b9d0e2f';
const STRONG_TOKEN = 'adm-4d8e2a6c0f3b7e1d5a9c2f6b0e4d8a1c7f3e5b9d';

describe('loadGatewayConfig', () => {
  it('applies the defaults to an empty environment', () => {
    const config = loadGatewayConfig({});
    expect(config).toBeInstanceOf(GatewayConfig);
    expect(config.port).toBe(8080);
    expect(config.host).toBe('0.0.0.0');
    expect(config.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(config.namespace).toBe('mgw');
    expect(config.chatDeadlineMs).toBe(600_000);
    expect(config.imageDeadlineMs).toBe(300_000);
    expect(config.bodyLimitBytes).toBe(10 * 1024 * 1024);
    expect(config.bodyTimeoutMs).toBe(60_000);
    expect(config.headersTimeoutMs).toBe(20_000);
    expect(config.chatMaxContentParts).toBe(256);
    expect(config.chatMaxTextChars).toBe(10_000_000);
    expect(config.requestSizeLimits()).toEqual({
      contentParts: 256,
      textChars: 10_000_000,
      imageParts: 256,
      imageBytes: 10 * 1024 * 1024,
    });
    expect(config.modelsRequireAuth).toBe(true);
    expect(config.defaultChatModel).toBe('sim-chat');
    expect(config.defaultImageModel).toBe('sim-image');
    expect(config.nodeEnv).toBe('development');
    expect(config.isProduction).toBe(false);
  });

  it('reads typed values from the environment', () => {
    const config = loadGatewayConfig({
      PORT: ' 9000 ',
      REDIS_URL: 'rediss://cache.internal:6380',
      CHAT_DEADLINE_MS: '1000',
      IMAGE_DEADLINE_MS: '2000',
      BODY_LIMIT_BYTES: '2048',
      SSE_KEEPALIVE_MS: '0',
      GATEWAY_API_KEYS: 'key-12345678',
    });
    expect(config.port).toBe(9000);
    expect(config.redisUrl).toBe('rediss://cache.internal:6380');
    expect(config.chatDeadlineMs).toBe(1000);
    expect(config.imageDeadlineMs).toBe(2000);
    expect(config.bodyLimitBytes).toBe(2048);
    expect(config.sseKeepAliveMs).toBe(0);
  });

  it('ignores unrelated environment variables', () => {
    expect(() => loadGatewayConfig({ PATH: '/usr/bin', HOME: '/root', SOMETHING: 'x' })).not.toThrow();
  });

  it.each(['abc', '80.5', '-1', '65536', '8080abc', ''])(
    'refuses PORT=%p with a message naming PORT',
    (port) => {
      const error = configError({ PORT: port });
      expect(error.message).toContain('PORT');
      expect(error.problems.some((p) => p.includes('PORT must be an integer between 0 and 65535'))).toBe(
        true,
      );
    },
  );

  it.each(['0', '65535'])('accepts PORT=%p', (port) => {
    expect(loadGatewayConfig({ PORT: port }).port).toBe(Number(port));
  });

  it('reads DOCS_URL, the guides /docs and /openapi.json link, and refuses what is no http(s) URL', () => {
    expect(loadGatewayConfig({}).docsUrl).toBeUndefined();
    const url = 'https://code.example.org/platform/model-gateway/-/blob/main/docs/README.md';
    expect(loadGatewayConfig({ DOCS_URL: ` ${url} ` }).docsUrl).toBe(url);
    expect(loadGatewayConfig({ DOCS_URL: 'http://docs.internal:8000/' }).docsUrl).toBe(
      'http://docs.internal:8000/',
    );
    for (const bad of ['docs/README.md', 'ftp://host/docs', 'javascript:alert(1)']) {
      expect(configError({ DOCS_URL: bad }).problems).toEqual([
        expect.stringContaining('DOCS_URL must be an http(s) URL'),
      ]);
    }
  });

  it('reports every problem at once', () => {
    const error = configError({ PORT: 'x', REDIS_URL: 'http://nope', CHAT_DEADLINE_MS: '5' });
    // A non-integer PORT fails several constraints that share one message; distinct problems count.
    expect(new Set(error.problems).size).toBe(3);
    expect(error.message).toContain('PORT');
    expect(error.message).toContain('REDIS_URL');
    expect(error.message).toContain('CHAT_DEADLINE_MS');
  });

  it('refuses production without API keys, naming GATEWAY_API_KEYS', () => {
    const error = configError({ NODE_ENV: 'production' });
    expect(error.message).toContain('GATEWAY_API_KEYS');
    expect(error.problems).toHaveLength(1);
  });

  it('refuses production with only blank keys', () => {
    expect(configError({ NODE_ENV: 'production', GATEWAY_API_KEYS: ' , ,' }).message).toContain(
      'GATEWAY_API_KEYS',
    );
  });

  it('accepts production with keys and generates none', () => {
    const config = loadGatewayConfig({ NODE_ENV: 'production', GATEWAY_API_KEYS: STRONG_KEY });
    expect(config.isProduction).toBe(true);
    expect(config.apiKeys).toEqual([STRONG_KEY]);
    expect(config.generatedDevKey).toBeNull();
  });

  it('generates a development key when none is configured', () => {
    const config = loadGatewayConfig({});
    expect(config.generatedDevKey).toEqual(expect.any(String));
    expect(config.generatedDevKey).toMatch(/^sk-gw-dev-[A-Za-z0-9_-]{32}$/);
    expect(config.apiKeys).toEqual([config.generatedDevKey]);
  });

  it('generates a different development key on each load', () => {
    expect(loadGatewayConfig({}).generatedDevKey).not.toBe(loadGatewayConfig({}).generatedDevKey);
  });

  it('splits and trims GATEWAY_API_KEYS', () => {
    const config = loadGatewayConfig({ GATEWAY_API_KEYS: 'a-key-123456, b-key-123456' });
    expect(config.apiKeys).toEqual(['a-key-123456', 'b-key-123456']);
    expect(config.generatedDevKey).toBeNull();
  });

  it('drops empty entries from GATEWAY_API_KEYS', () => {
    expect(loadGatewayConfig({ GATEWAY_API_KEYS: ',a-key-123456,, ' }).apiKeys).toEqual(['a-key-123456']);
  });

  it.each(['short', 'has space-123456'])('refuses a malformed key %p naming GATEWAY_API_KEYS', (key) => {
    expect(configError({ GATEWAY_API_KEYS: key }).message).toContain('GATEWAY_API_KEYS');
  });

  it.each([
    ['false', false],
    ['FALSE', false],
    ['0', false],
    ['no', false],
    ['true', true],
    ['1', true],
    [' On ', true],
  ])('reads MODELS_REQUIRE_AUTH=%p as %p', (value, expected) => {
    expect(loadGatewayConfig({ MODELS_REQUIRE_AUTH: value }).modelsRequireAuth).toBe(expected);
  });

  it('refuses a MODELS_REQUIRE_AUTH that is not a boolean', () => {
    expect(configError({ MODELS_REQUIRE_AUTH: 'maybe' }).message).toContain('MODELS_REQUIRE_AUTH');
  });

  it.each([
    ['CHAT_DEADLINE_MS', '99'],
    ['IMAGE_DEADLINE_MS', 'soon'],
    ['BODY_LIMIT_BYTES', '1023'],
    ['STREAM_BUFFER_LIMIT_BYTES', '10'],
    ['SSE_KEEPALIVE_MS', '-5'],
    ['BODY_TIMEOUT_MS', '99'],
    ['BODY_TIMEOUT_MS', 'slow'],
    ['HEADERS_TIMEOUT_MS', '0'],
    ['CHAT_MAX_CONTENT_PARTS', '0'],
    ['CHAT_MAX_CONTENT_PARTS', '4097'],
    ['CHAT_MAX_TEXT_CHARS', '0'],
    ['CHAT_MAX_TEXT_CHARS', '100000001'],
    ['CHAT_MAX_TEXT_CHARS', 'lots'],
    ['CHAT_MAX_IMAGE_PARTS', '0'],
    ['CHAT_MAX_IMAGE_PARTS', '65537'],
    ['CHAT_MAX_IMAGE_BYTES', 'big'],
  ])('refuses %s=%p naming it', (name, value) => {
    expect(configError({ [name]: value }).message).toContain(name);
  });

  it.each([
    ['CHAT_DEADLINE_MS', '100', 'chatDeadlineMs'],
    ['BODY_LIMIT_BYTES', '1024', 'bodyLimitBytes'],
    ['BODY_TIMEOUT_MS', '100', 'bodyTimeoutMs'],
    ['HEADERS_TIMEOUT_MS', '100', 'headersTimeoutMs'],
    ['CHAT_MAX_CONTENT_PARTS', '1', 'chatMaxContentParts'],
    ['CHAT_MAX_TEXT_CHARS', '1', 'chatMaxTextChars'],
    ['CHAT_MAX_IMAGE_PARTS', '1', 'chatMaxImageParts'],
    ['CHAT_MAX_IMAGE_BYTES', '1', 'chatMaxImageBytes'],
  ] as const)('accepts the lower bound %s=%p', (name, value, key) => {
    expect(loadGatewayConfig({ [name]: value })[key]).toBe(Number(value));
  });

  it.each([
    ['CHAT_MAX_CONTENT_PARTS', '4096', 'chatMaxContentParts'],
    ['CHAT_MAX_TEXT_CHARS', '100000000', 'chatMaxTextChars'],
    ['CHAT_MAX_IMAGE_PARTS', '65536', 'chatMaxImageParts'],
    ['CHAT_MAX_IMAGE_BYTES', '1073741824', 'chatMaxImageBytes'],
  ] as const)('accepts the ceiling %s=%p (what a worker re-checks jobs against)', (name, value, key) => {
    expect(loadGatewayConfig({ [name]: value })[key]).toBe(Number(value));
  });

  describe('the operator listener (ADMIN_PORT, ADMIN_HOST)', () => {
    it('is off by default, and off when ADMIN_PORT is blank', () => {
      expect(loadGatewayConfig({}).adminPort).toBeUndefined();
      expect(loadGatewayConfig({ ADMIN_PORT: ' ' }).adminPort).toBeUndefined();
    });

    it('reads the port and the host, the host defaulting to HOST', () => {
      const config = loadGatewayConfig({ PORT: '8080', ADMIN_PORT: ' 9090 ', ADMIN_HOST: ' 127.0.0.1 ' });
      expect(config.adminPort).toBe(9090);
      expect(config.adminHost).toBe('127.0.0.1');
      expect(loadGatewayConfig({ ADMIN_PORT: '9090' }).adminHost).toBeUndefined();
    });

    it.each(['0', '65536', 'admin', '90.5', '-1'])('refuses ADMIN_PORT=%p naming it', (port) => {
      const error = configError({ ADMIN_PORT: port });
      expect(error.problems).toContainEqual(
        expect.stringContaining('ADMIN_PORT must be an integer between 1 and 65535'),
      );
    });

    it('refuses an ADMIN_PORT equal to PORT, naming both', () => {
      const error = configError({ PORT: '8080', ADMIN_PORT: '8080' });
      expect(error.problems).toEqual(['ADMIN_PORT: must differ from PORT (both are 8080)']);
      expect(configError({ ADMIN_PORT: '8080' }).problems).toHaveLength(1);
    });

    it('refuses ADMIN_HOST without ADMIN_PORT', () => {
      expect(configError({ ADMIN_HOST: '127.0.0.1' }).problems).toEqual([
        'ADMIN_HOST: set only with ADMIN_PORT (the operator listener it places)',
      ]);
    });
  });

  describe('secrets in production', () => {
    const production = (env: NodeJS.ProcessEnv) => ({ NODE_ENV: 'production', ...env });

    it.each([
      ['sk-change-me-please', 'placeholder'], // .env.example
      ['sk-example-change-me', 'placeholder'], // a published example Secret's value
      ['sk-my-dev-key', 'placeholder'], // the README's npm start example
      ['changeme', 'placeholder'],
      ['a-real-looking-key', 'is 18 characters'],
      ['prod-key-7q4w', 'is 13 characters'],
      ['sk-0123456789abcdef0123456789abcde', 'placeholder'],
      ['sk-placeholder-key-for-production-use-only', 'placeholder'],
      ['this-is-an-example-key-do-not-use-it-please', 'placeholder'],
      ['sk-CHANGE_ME-7f3a9c1e5b2d8f4a6c0e9b7d1f3a5c', 'placeholder'],
      ['your-api-key-goes-here-1a2b3c4d5e6f7a8b9c0d', 'placeholder'],
      ['abababababababababababababababababab', 'repetitive'],
    ])('refuses GATEWAY_API_KEYS=%p, saying why without quoting it', (key, why) => {
      const error = configError(production({ GATEWAY_API_KEYS: key }));
      expect(error.problems).toHaveLength(1);
      expect(error.problems[0]).toMatch(/^apiKeys: GATEWAY_API_KEYS entry 1 of 1 /);
      expect(error.problems[0]).toContain(why);
      expect(error.problems[0]).toContain('openssl rand -hex 32');
      expect(error.message).not.toContain(key);
    });

    it('names each weak entry among good ones', () => {
      const error = configError(
        production({ GATEWAY_API_KEYS: `${STRONG_KEY},short-key-1,${STRONG_KEY}x,sk-change-me-please` }),
      );
      expect(error.problems).toEqual([
        expect.stringMatching(
          /^apiKeys: GATEWAY_API_KEYS entry 2 of 4 is 11 characters.*; entry 4 of 4 is a placeholder/,
        ),
      ]);
    });

    it.each([
      ['short', 'admin-token-of-24-chars!', 'is 24 characters'],
      ['a placeholder', 'change-me-admin-token-0123456789abcdef', 'is a placeholder'],
    ])('refuses a GATEWAY_ADMIN_TOKEN that is %s', (_what, token, why) => {
      const error = configError(production({ GATEWAY_API_KEYS: STRONG_KEY, GATEWAY_ADMIN_TOKEN: token }));
      expect(error.problems).toEqual([
        expect.stringMatching(new RegExp(`^adminToken: GATEWAY_ADMIN_TOKEN ${why}`)),
      ]);
      expect(error.message).not.toContain(token);
    });

    it('lists every problem at once: weak keys, weak admin token and other variables', () => {
      const error = configError(
        production({
          GATEWAY_API_KEYS: 'changeme',
          GATEWAY_ADMIN_TOKEN: 'admin-token-of-24-chars!',
          PORT: 'x',
        }),
      );
      expect(error.problems).toHaveLength(3);
      for (const name of ['GATEWAY_API_KEYS', 'GATEWAY_ADMIN_TOKEN', 'PORT']) {
        expect(error.problems.filter((p) => p.includes(name))).toHaveLength(1);
      }
    });

    it('accepts long random keys and token', () => {
      const config = loadGatewayConfig(
        production({ GATEWAY_API_KEYS: `${STRONG_KEY}, ${STRONG_KEY}2`, GATEWAY_ADMIN_TOKEN: STRONG_TOKEN }),
      );
      expect(config.apiKeys).toEqual([STRONG_KEY, `${STRONG_KEY}2`]);
      expect(config.adminToken).toBe(STRONG_TOKEN);
    });

    it('keeps development and test as they were: short and example keys are accepted', () => {
      for (const nodeEnv of ['development', 'test']) {
        const config = loadGatewayConfig({
          NODE_ENV: nodeEnv,
          GATEWAY_API_KEYS: 'sk-change-me-please,changeme',
          GATEWAY_ADMIN_TOKEN: 'admin-token-of-24-chars!',
        });
        expect(config.apiKeys).toEqual(['sk-change-me-please', 'changeme']);
      }
    });
  });
  describe('files (FILES_*)', () => {
    it("keeps files in a directory by default, within OpenAI's limits for a batch input file", () => {
      const config = loadGatewayConfig({});
      expect(config).toMatchObject({
        filesStore: 'directory',
        filesDir: 'data/files',
        filesMaxBytes: 200 * 1024 * 1024,
        filesMaxLines: 50_000,
        filesExpirySeconds: 30 * 24 * 3600,
      });
    });

    it('reads an S3-compatible store and lower limits', () => {
      const config = loadGatewayConfig({
        FILES_STORE: 's3',
        FILES_S3_BUCKET: 'batch-files',
        FILES_S3_ENDPOINT: 'http://minio:9000',
        FILES_S3_FORCE_PATH_STYLE: 'true',
        FILES_MAX_BYTES: '1048576',
        FILES_MAX_LINES: '100',
      });
      expect(config).toMatchObject({
        filesStore: 's3',
        filesS3Bucket: 'batch-files',
        filesS3Endpoint: 'http://minio:9000',
        filesS3ForcePathStyle: true,
        filesS3Region: 'us-east-1',
        filesMaxBytes: 1_048_576,
        filesMaxLines: 100,
      });
    });

    it("refuses limits above OpenAI's, an unknown store, and S3 without a bucket or with a bad endpoint", () => {
      expect(configError({ FILES_MAX_BYTES: String(200 * 1024 * 1024 + 1) }).message).toContain(
        'FILES_MAX_BYTES must be an integer between 1 and 209715200',
      );
      expect(configError({ FILES_MAX_LINES: '50001' }).message).toContain('FILES_MAX_LINES');
      expect(configError({ FILES_STORE: 'gcs' }).message).toContain(
        'FILES_STORE must be one of directory, s3',
      );
      expect(configError({ FILES_STORE: 's3' }).message).toContain('FILES_S3_BUCKET must name a bucket');
      expect(configError({ FILES_STORE: 's3', FILES_S3_BUCKET: 'ab' }).message).toContain('FILES_S3_BUCKET');
      expect(
        configError({ FILES_STORE: 's3', FILES_S3_BUCKET: 'files', FILES_S3_ENDPOINT: 'minio:9000' }).message,
      ).toContain('FILES_S3_ENDPOINT must be an http(s) URL');
    });
  });
});
