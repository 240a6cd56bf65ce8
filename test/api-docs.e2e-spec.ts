import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { OpenApiSchemas } from './fixtures/openapi-schemas';
import { collectSse } from './support/sse';
import { Stack } from './support/stack';

const ADMIN_TOKEN = 'admin-token-for-the-api-docs-test';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Screenshots for a person to look at (ignored by git, like dist/). */
const ARTIFACTS = resolve(__dirname, '..', 'dist-test-artifacts');

interface Operation {
  responses: Record<string, { content?: Record<string, { schema: object }> }>;
}

/**
 * The API document against the gateway as clients meet it: real answers of the running stack — JSON,
 * server-sent events, errors, the admin API — must fit the schemas the document gives for their operation,
 * status and media type; and the reference page works in a real browser under its CSP.
 */
describe('API docs (GET /openapi.json, GET /docs)', () => {
  let stack: Stack;
  let schemas: OpenApiSchemas;
  let paths: Record<string, Record<string, Operation>>;

  beforeAll(async () => {
    stack = await Stack.start({
      env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
      waitForModels: ['sim-chat', 'sim-chat-words', 'sim-image'],
    });
    const response = await fetch(`${stack.baseUrl}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const document = (await response.json()) as {
      paths: typeof paths;
      components: { schemas: Record<string, object> };
    };
    paths = document.paths;
    schemas = new OpenApiSchemas(document);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  /** Checks a real answer against the schema the document gives for its path, method, status and media type. */
  async function expectDocumented(path: string, method: string, response: Response): Promise<unknown> {
    const mediaType = (response.headers.get('content-type') ?? '').split(';')[0]!;
    const documented = paths[path]?.[method]?.responses[String(response.status)]?.content?.[mediaType];
    expect({
      path,
      method,
      status: response.status,
      mediaType,
      documented: documented !== undefined,
    }).toEqual({
      path,
      method,
      status: response.status,
      mediaType,
      documented: true,
    });
    if (mediaType !== 'application/json') return undefined;
    const body: unknown = await response.json();
    expect({ path, status: response.status, problems: schemas.problems(documented!.schema, body) }).toEqual({
      path,
      status: response.status,
      problems: [],
    });
    return body;
  }

  it('describes the answers of /v1/models, chat completions and images', async () => {
    const auth = { authorization: `Bearer ${stack.apiKey}` };
    await expectDocumented('/v1/models', 'get', await fetch(`${stack.baseUrl}/v1/models`, { headers: auth }));
    await expectDocumented(
      '/v1/models/{id}',
      'get',
      await fetch(`${stack.baseUrl}/v1/models/sim-chat`, { headers: auth }),
    );
    await expectDocumented(
      '/v1/models/{id}',
      'get',
      await fetch(`${stack.baseUrl}/v1/models/nope`, { headers: auth }),
    );
    await expectDocumented(
      '/v1/chat/completions',
      'post',
      await stack.post('/v1/chat/completions', {
        model: 'sim-chat-words',
        n: 2,
        max_tokens: 12,
        logprobs: true,
        top_logprobs: 2,
        messages: [{ role: 'user', content: 'Hello, docs!' }],
      }),
    );
    await expectDocumented(
      '/v1/chat/completions',
      'post',
      await stack.post('/v1/chat/completions', {
        model: 'sim-chat',
        messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
        tools: [
          {
            type: 'function',
            function: {
              name: 'get_weather',
              parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
            },
          },
        ],
      }),
    );
    await expectDocumented(
      '/v1/images/generations',
      'post',
      await stack.post('/v1/images/generations', {
        model: 'sim-image',
        prompt: 'a lighthouse',
        size: '256x256',
      }),
    );
  });

  it('describes every event of a stream: chunks fitting ChatCompletionChunk, then data: [DONE]', async () => {
    const response = await stack.post('/v1/chat/completions', {
      model: 'sim-chat-words',
      stream: true,
      max_tokens: 10,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Stream, please' }],
    });
    await expectDocumented('/v1/chat/completions', 'post', response);
    const events = await collectSse(response.body!);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((data) => JSON.parse(data) as unknown);
    expect(chunks.length).toBeGreaterThan(3);
    for (const chunk of chunks) expect(schemas.problems('ChatCompletionChunk', chunk)).toEqual([]);
  });

  it('describes the errors: bad input, no key, wrong key, a bad admin token', async () => {
    const base = stack.baseUrl;
    const cases: Array<[string, string, Promise<Response>]> = [
      ['/v1/chat/completions', 'post', stack.post('/v1/chat/completions', { messages: [], temperature: 3 })],
      ['/v1/images/generations', 'post', stack.post('/v1/images/generations', { prompt: 'x', n: 11 })],
      ['/v1/models', 'get', fetch(`${base}/v1/models`)],
      [
        '/v1/models',
        'get',
        fetch(`${base}/v1/models`, { headers: { authorization: 'Bearer sk-wrong-key-000' } }),
      ],
      [
        '/admin/keys',
        'get',
        fetch(`${base}/admin/keys`, { headers: { authorization: 'Bearer not-the-token' } }),
      ],
    ];
    for (const [path, method, pending] of cases) {
      const response = await pending;
      expect(response.status).toBeGreaterThanOrEqual(400);
      await expectDocumented(path, method, response);
    }
  });

  it('describes the admin API: create, list, show, update, revoke a key, and usage', async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const call = (method: string, path: string, body?: unknown) =>
      fetch(`${stack.baseUrl}${path}`, {
        method,
        headers: admin,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const created = (await expectDocumented(
      '/admin/keys',
      'post',
      await call('POST', '/admin/keys', { name: 'docs-test', models: ['sim-chat'], rpm: 60 }),
    )) as { id: string };
    await expectDocumented('/admin/keys', 'get', await call('GET', '/admin/keys'));
    await expectDocumented('/admin/keys/{id}', 'get', await call('GET', `/admin/keys/${created.id}`));
    await expectDocumented(
      '/admin/keys/{id}',
      'patch',
      await call('PATCH', `/admin/keys/${created.id}`, { rpm: null }),
    );
    await expectDocumented(
      '/admin/keys/{id}',
      'patch',
      await call('PATCH', `/admin/keys/${created.id}`, { rpm: 0 }),
    );
    await expectDocumented('/admin/keys/{id}', 'delete', await call('DELETE', `/admin/keys/${created.id}`));
    await expectDocumented('/admin/usage', 'get', await call('GET', '/admin/usage'));
    await expectDocumented('/healthz', 'get', await fetch(`${stack.baseUrl}/healthz`));
    await expectDocumented('/readyz', 'get', await fetch(`${stack.baseUrl}/readyz`));
  });

  describe('in a browser', () => {
    let browser: Browser;

    beforeAll(async () => {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    });

    afterAll(async () => {
      await browser?.close();
    });

    it('/docs renders every operation under its CSP and "Try it out" calls the gateway with a key', async () => {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(message.text());
      });
      page.on('pageerror', (error) => problems.push(error.message));
      const response = await page.goto(`${stack.baseUrl}/docs`);
      expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
      await page.locator('.opblock').first().waitFor({ timeout: 30_000 });
      const operations = await page.locator('.opblock').count();
      const documented = Object.values(paths).reduce(
        (sum, operationsOfPath) => sum + Object.keys(operationsOfPath).length,
        0,
      );
      expect(operations).toBe(documented);

      await page.locator('.auth-wrapper button.authorize').click();
      const modal = page.locator('.modal-ux');
      const apiKey = modal
        .locator('.auth-container')
        .filter({ has: page.locator('h4', { hasText: 'apiKey' }) });
      await apiKey.locator('input').fill(stack.apiKey);
      await apiKey.locator('button.authorize').click();
      await modal.locator('button.btn-done').first().click();

      const listModels = page.locator('#operations-Models-listModels');
      await listModels.locator('.opblock-summary-control').click();
      await listModels.getByRole('button', { name: 'Try it out' }).click();
      await listModels.getByRole('button', { name: 'Execute' }).click();
      const status = listModels.locator('.live-responses-table tr.response .response-col_status').first();
      await status.waitFor({ timeout: 15_000 });
      expect((await status.textContent())?.trim()).toBe('200');
      await expect(
        listModels.locator('.live-responses-table .microlight').first().textContent(),
      ).resolves.toContain('sim-chat');
      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'api-docs.png'), fullPage: false });
      expect(problems).toEqual([]);
      await page.close();
    });
  });
});
