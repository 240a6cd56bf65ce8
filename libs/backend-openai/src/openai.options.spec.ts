import { ConfigError, type CatalogModel } from '@mgw/config';
import { catalogModel } from '@mgw/testing';
import type { BackendSettings } from '@mgw/inference';
import { parseOpenAIBackendOptions, type OpenAIUpstreamOptions } from './openai.options';

const settings: BackendSettings = {
  simChatTtftMs: 0,
  simChatTokensPerS: 0,
  simImageLatencyMs: 0,
  concurrency: 8,
  environment: new Map([
    ['VLLM_KEY', ' sk-secret '],
    ['EMPTY_KEY', '  '],
  ]),
};

const model = (backend: Record<string, unknown>, kind: 'chat' | 'image' = 'chat'): CatalogModel =>
  catalogModel(kind, { kind: 'openai', ...backend }, 'llama');

/** The one upstream of the `baseUrl` shorthand. */
function parseOpenAIUpstreamOptions(model: CatalogModel, given: BackendSettings): OpenAIUpstreamOptions {
  const { upstreams } = parseOpenAIBackendOptions(model, given);
  expect(upstreams).toHaveLength(1);
  return upstreams[0]!;
}

function problemsOf(backend: Record<string, unknown>): string[] {
  try {
    parseOpenAIBackendOptions(model(backend), settings);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('openai backend options', () => {
  it('applies defaults: the public id upstream, the worker concurrency as pool size, no key', () => {
    const options = parseOpenAIUpstreamOptions(model({ baseUrl: 'http://ollama:11434/v1/' }), settings);
    expect(options).toEqual({
      name: '0',
      baseUrl: new URL('http://ollama:11434/v1'),
      apiKey: null,
      upstreamModel: 'llama',
      timeoutMs: 300_000,
      headers: {},
      maxConnections: 8,
      maxConcurrency: 8,
      loadMetrics: null,
    });
    expect(options.baseUrl.pathname).toBe('/v1');
  });

  it('reads every option, the key from the environment variable it names', () => {
    const options = parseOpenAIUpstreamOptions(
      model(
        {
          baseUrl: 'https://api.example.com/openai/v1',
          apiKeyEnv: 'VLLM_KEY',
          upstreamModel: 'meta-llama/Llama-3.1-8B-Instruct',
          timeoutMs: 5000,
          headers: { 'X-Tenant': 'blue', 'OpenAI-Organization': 'org-1' },
          maxConnections: 3,
        },
        'image',
      ),
      settings,
    );
    expect(options).toEqual({
      name: '0',
      baseUrl: new URL('https://api.example.com/openai/v1'),
      apiKey: 'sk-secret',
      upstreamModel: 'meta-llama/Llama-3.1-8B-Instruct',
      timeoutMs: 5000,
      headers: { 'x-tenant': 'blue', 'openai-organization': 'org-1' },
      maxConnections: 3,
      maxConcurrency: 8,
      loadMetrics: null,
    });
  });

  it('requires a usable base URL', () => {
    expect(problemsOf({})).toEqual([
      'catalog model "llama": backend.baseUrl is required (e.g. "http://localhost:11434/v1")',
    ]);
    expect(problemsOf({ baseUrl: 'localhost:8000' })[0]).toContain('backend.baseUrl must use http or https');
    expect(problemsOf({ baseUrl: 'not a url' })[0]).toContain(
      'backend.baseUrl must be an absolute http(s) URL',
    );
    expect(problemsOf({ baseUrl: 42 })[0]).toContain('backend.baseUrl must be an absolute http(s) URL');
    expect(problemsOf({ baseUrl: 'ftp://host/v1' })[0]).toContain('must use http or https, not ftp');
    expect(problemsOf({ baseUrl: 'http://host/v1?x=1' })[0]).toContain('must not have a query');
  });

  it('refuses credentials in the URL without repeating them', () => {
    const [problem] = problemsOf({ baseUrl: 'http://user:hunter2@host/v1' });
    expect(problem).toContain('backend.baseUrl must not carry credentials');
    expect(problem).not.toContain('hunter2');
  });

  it('names the model, the field and the variable when the key variable is missing or empty', () => {
    expect(problemsOf({ baseUrl: 'http://h/v1', apiKeyEnv: 'NOPE_KEY' })).toEqual([
      'catalog model "llama": backend.apiKeyEnv names the environment variable NOPE_KEY, which is not set',
    ]);
    expect(problemsOf({ baseUrl: 'http://h/v1', apiKeyEnv: 'EMPTY_KEY' })).toEqual([
      'catalog model "llama": backend.apiKeyEnv names the environment variable EMPTY_KEY, which is empty',
    ]);
  });

  it('takes a key written where its variable name belongs for what it is, and does not echo it', () => {
    const [problem] = problemsOf({ baseUrl: 'http://h/v1', apiKeyEnv: 'sk-live-abc.def' });
    expect(problem).toBe(
      'catalog model "llama": backend.apiKeyEnv must be the name of an environment variable (letters, digits and _), not a key',
    );
  });

  it('keeps authorization and connection headers to itself', () => {
    expect(
      problemsOf({
        baseUrl: 'http://h/v1',
        headers: { Authorization: 'Bearer sk-x', Host: 'x', 'bad header': 'v', 'X-Ok': 'a\r\nb', 'X-Num': 1 },
      }),
    ).toEqual(['catalog model "llama": backend.headers must be an object of string values']);
    expect(
      problemsOf({
        baseUrl: 'http://h/v1',
        headers: { Authorization: 'Bearer sk-x', Host: 'x', 'bad header': 'v', 'X-Ok': 'a\r\nb' },
      }),
    ).toEqual([
      'catalog model "llama": backend.headers must not set authorization; name the variable holding the key in apiKeyEnv',
      'catalog model "llama": backend.headers["Host"] is set by the backend itself',
      'catalog model "llama": backend.headers["bad header"] is not a valid header name',
      'catalog model "llama": backend.headers["X-Ok"] must not contain line breaks or NUL',
    ]);
  });

  it('reports every problem at once, unknown options included', () => {
    expect(
      problemsOf({
        baseUrl: 'http://h/v1',
        timeoutMs: 0,
        maxConnections: 1.5,
        upstreamModel: '',
        apiKey: 'sk-x',
      }),
    ).toEqual([
      'catalog model "llama": backend.apiKey is not an option of the openai backend (known: baseUrl, apiKeyEnv, upstreamModel, timeoutMs, headers, maxConnections, maxConcurrency, loadMetrics, upstreams, maxAttempts, failureThreshold, probeIntervalMs, routing, prefixMinTokens, prefixWaitMs, loadMetricsIntervalMs)',
      'catalog model "llama": backend.upstreamModel must be a non-empty string of at most 256 characters',
      'catalog model "llama": backend.timeoutMs must be an integer from 1 to 3600000',
      'catalog model "llama": backend.maxConnections must be an integer from 1 to 10000',
    ]);
  });

  describe('upstreams', () => {
    const two = [
      { baseUrl: 'http://vllm-a:8000/v1', maxConcurrency: 4 },
      { name: 'gpu-b', baseUrl: 'http://vllm-b:8000/v1', maxConcurrency: 8, timeoutMs: 900 },
    ];

    it('reads each upstream, top-level fields as defaults, names by index unless given', () => {
      const options = parseOpenAIBackendOptions(
        model({
          upstreams: [
            ...two,
            { baseUrl: 'http://vllm-c:8000/v1', maxConcurrency: 2, upstreamModel: 'other', headers: {} },
          ],
          apiKeyEnv: 'VLLM_KEY',
          upstreamModel: 'meta-llama/Llama-3.1-8B-Instruct',
          headers: { 'X-Tenant': 'blue' },
          maxAttempts: 2,
          failureThreshold: 5,
          probeIntervalMs: 500,
        }),
        settings,
      );
      expect(options.pool).toEqual({
        maxAttempts: 2,
        failureThreshold: 5,
        probeIntervalMs: 500,
        routing: 'prefix',
        prefixMinTokens: 256,
        prefixWaitMs: 500,
        loadIntervalMs: 1000,
      });
      expect(options.upstreams).toEqual([
        {
          name: '0',
          baseUrl: new URL('http://vllm-a:8000/v1'),
          apiKey: 'sk-secret',
          upstreamModel: 'meta-llama/Llama-3.1-8B-Instruct',
          timeoutMs: 300_000,
          headers: { 'x-tenant': 'blue' },
          maxConnections: 8,
          maxConcurrency: 4,
          loadMetrics: null,
        },
        expect.objectContaining({ name: 'gpu-b', timeoutMs: 900, maxConcurrency: 8, apiKey: 'sk-secret' }),
        expect.objectContaining({ name: '2', upstreamModel: 'other', headers: {}, maxConcurrency: 2 }),
      ]);
    });

    it('defaults the pool settings, and the shorthand concurrency to the worker concurrency', () => {
      const options = parseOpenAIBackendOptions(model({ baseUrl: 'http://h/v1' }), settings);
      expect(options.pool).toEqual({
        maxAttempts: 3,
        failureThreshold: 3,
        probeIntervalMs: 2000,
        routing: 'prefix',
        prefixMinTokens: 256,
        prefixWaitMs: 500,
        loadIntervalMs: 1000,
      });
      expect(
        parseOpenAIUpstreamOptions(model({ baseUrl: 'http://h/v1', maxConcurrency: 3 }), settings),
      ).toMatchObject({ maxConcurrency: 3 });
    });

    it('names the model, the upstream index and the field of every problem', () => {
      expect(
        problemsOf({
          upstreams: [
            { baseUrl: 'http://a/v1', maxConcurrency: 0 },
            { baseUrl: 'ftp://b/v1', maxConcurrency: 2, apiKeyEnv: 'NOPE_KEY', port: 1 },
            { name: 'x y', maxConcurrency: 1 },
            { name: '0', baseUrl: 'http://d/v1' },
            'http://e/v1',
          ],
        }),
      ).toEqual([
        'catalog model "llama": backend.upstreams[1].port is not an option of an upstream of the openai backend (known: name, baseUrl, apiKeyEnv, upstreamModel, timeoutMs, headers, maxConnections, maxConcurrency, loadMetrics)',
        'catalog model "llama": backend.upstreams[4] must be an object',
        'catalog model "llama": backend.upstreams[0].maxConcurrency must be an integer from 1 to 100000',
        'catalog model "llama": backend.upstreams[1].baseUrl must use http or https, not ftp',
        'catalog model "llama": backend.upstreams[1].apiKeyEnv names the environment variable NOPE_KEY, which is not set',
        'catalog model "llama": backend.upstreams[2].name must be letters, digits, _ . : - (it is a metric label)',
        'catalog model "llama": backend.upstreams[2].baseUrl is required (e.g. "http://localhost:11434/v1")',
        'catalog model "llama": backend.upstreams[3].name "0" is used by another upstream',
        'catalog model "llama": backend.upstreams[3].maxConcurrency is required: the requests this server takes at once',
      ]);
    });

    it('reads the routing and engine-load options: load format per upstream, the top-level one as default', () => {
      const options = parseOpenAIBackendOptions(
        model({
          upstreams: [...two, { baseUrl: 'http://c/v1', maxConcurrency: 1, loadMetrics: 'llamacpp' }],
          loadMetrics: 'vllm',
          routing: 'least-loaded',
          prefixMinTokens: 1024,
          prefixWaitMs: 0,
          loadMetricsIntervalMs: 500,
        }),
        settings,
      );
      expect(options.pool).toMatchObject({
        routing: 'least-loaded',
        prefixMinTokens: 1024,
        prefixWaitMs: 0,
        loadIntervalMs: 500,
      });
      expect(options.upstreams.map((u) => u.loadMetrics)).toEqual(['vllm', 'vllm', 'llamacpp']);
    });

    it('names the field of a routing option that makes no sense', () => {
      expect(
        problemsOf({
          upstreams: [{ baseUrl: 'http://a/v1', maxConcurrency: 1, loadMetrics: 'prometheus' }],
          routing: 'random',
          prefixWaitMs: -1,
          prefixMinTokens: 'many',
          loadMetricsIntervalMs: 10,
        }),
      ).toEqual([
        "catalog model \"llama\": backend.routing must be 'prefix' or 'least-loaded'",
        'catalog model "llama": backend.prefixMinTokens must be an integer from 0 to 1000000',
        'catalog model "llama": backend.prefixWaitMs must be an integer from 0 to 60000',
        'catalog model "llama": backend.loadMetricsIntervalMs must be an integer from 100 to 60000',
        "catalog model \"llama\": backend.upstreams[0].loadMetrics must be 'vllm' or 'sglang' or 'llamacpp'",
      ]);
      // Prefix routing with one upstream is fine: there is nowhere else to go.
      expect(
        parseOpenAIBackendOptions(model({ baseUrl: 'http://a/v1', routing: 'prefix' }), settings).pool,
      ).toMatchObject({ routing: 'prefix' });
    });

    it('refuses an empty or oversized list, and the shorthand fields next to it', () => {
      expect(problemsOf({ upstreams: [] })).toEqual([
        'catalog model "llama": backend.upstreams must be a list of 1 to 32 objects',
      ]);
      expect(problemsOf({ upstreams: {} })).toEqual([
        'catalog model "llama": backend.upstreams must be a list of 1 to 32 objects',
      ]);
      expect(
        problemsOf({ upstreams: two, baseUrl: 'http://h/v1', maxConcurrency: 3, maxAttempts: 0 }),
      ).toEqual([
        'catalog model "llama": backend.maxAttempts must be an integer from 1 to 10',
        'catalog model "llama": backend.baseUrl belongs to each element of backend.upstreams, not next to it',
        'catalog model "llama": backend.maxConcurrency belongs to each element of backend.upstreams, not next to it',
      ]);
    });
  });
});
