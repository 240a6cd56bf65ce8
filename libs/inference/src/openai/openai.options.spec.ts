import { ConfigError, type CatalogModel } from '@mgw/config';
import { catalogModel } from '@mgw/testing';
import type { BackendSettings } from '../backend-settings';
import { parseOpenAIUpstreamOptions } from './openai.options';

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

function problemsOf(backend: Record<string, unknown>): string[] {
  try {
    parseOpenAIUpstreamOptions(model(backend), settings);
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
      baseUrl: new URL('http://ollama:11434/v1'),
      apiKey: null,
      upstreamModel: 'llama',
      timeoutMs: 300_000,
      headers: {},
      maxConnections: 8,
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
      baseUrl: new URL('https://api.example.com/openai/v1'),
      apiKey: 'sk-secret',
      upstreamModel: 'meta-llama/Llama-3.1-8B-Instruct',
      timeoutMs: 5000,
      headers: { 'x-tenant': 'blue', 'openai-organization': 'org-1' },
      maxConnections: 3,
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
      'catalog model "llama": backend.apiKey is not an option of the openai backend (known: baseUrl, apiKeyEnv, upstreamModel, timeoutMs, headers, maxConnections)',
      'catalog model "llama": backend.upstreamModel must be a non-empty string of at most 256 characters',
      'catalog model "llama": backend.timeoutMs must be an integer from 1 to 3600000',
      'catalog model "llama": backend.maxConnections must be an integer from 1 to 10000',
    ]);
  });
});
