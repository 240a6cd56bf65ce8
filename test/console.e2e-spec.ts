import { mkdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Locator, Page } from 'playwright-core';
import { OpenApiSchemas } from './fixtures/openapi-schemas';
import { ConsoleBrowser } from './support/console-browser';
import { freePort } from './support/free-port';
import { scrape, valueOf } from './support/prometheus';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

/**
 * The web console in a real browser (Debian's chromium through playwright-core) against the real stack:
 * every element is found by its role and accessible name, as a user of assistive technology finds it.
 * Screenshots of each view go to test/artifacts/console/.
 */

const ARTIFACTS = resolve(__dirname, 'artifacts', 'console');
const ADMIN_TOKEN = 'console-e2e-admin-token-0123456789';
const CONSOLE_JS_BUDGET_BYTES = 150 * 1024;

/**
 * Runs in the page (as a string: this file is type-checked without the DOM's types). Records the last
 * answer's length at every change of the page, and whether the end of the stream (its statistics) was
 * shown by then.
 */
const RECORD_ANSWER_STEPS = `(() => {
  const steps = [];
  window.answerSteps = steps;
  new MutationObserver(() => {
    const answers = document.querySelectorAll('[role="log"] .turn.assistant .message-text');
    const length = (answers[answers.length - 1]?.textContent ?? '').length;
    const ended = document.querySelector('[aria-label="Stream statistics"]') !== null;
    if (steps[steps.length - 1]?.length !== length) steps.push({ length, ended });
  }).observe(document.body, { subtree: true, childList: true, characterData: true });
})()`;

const CATALOG = {
  models: [
    { id: 'sim-chat', type: 'chat', owned_by: 'model-gateway', backend: { kind: 'simulator', mode: 'echo' } },
    {
      // Paced, so a stream is visibly a stream and long enough to be stopped half-way.
      id: 'sim-chat-words',
      type: 'chat',
      owned_by: 'model-gateway',
      backend: { kind: 'simulator', mode: 'words', maxWords: 400, tokensPerSecond: 25 },
    },
    { id: 'sim-image', type: 'image', owned_by: 'model-gateway', backend: { kind: 'simulator' } },
  ],
};

describe('web console (chromium)', () => {
  let stack: Stack;
  let browser: ConsoleBrowser | undefined;
  let page: Page;
  let chatMetrics: string;

  beforeAll(async () => {
    const chatPort = await freePort();
    chatMetrics = `http://127.0.0.1:${chatPort}/metrics`;
    const [started, launched] = await Promise.all([
      Stack.start({
        catalog: CATALOG,
        env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
        appEnv: { 'chat-worker': { METRICS_PORT: String(chatPort) } },
        waitForModels: ['sim-chat', 'sim-chat-words', 'sim-image'],
      }),
      ConsoleBrowser.launch(),
    ]);
    stack = started;
    browser = launched;
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.baseUrl });
    page = browser.page;
    await mkdir(ARTIFACTS, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  }, 30_000);

  const screenshot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
  const nav = (name: string) =>
    page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name, exact: true });
  const textbox = (name: string) => page.getByRole('textbox', { name, exact: true });
  const button = (name: string) => page.getByRole('button', { name, exact: true });
  const conversation = () => page.getByRole('log', { name: 'Conversation' });
  const lastAnswer = () => conversation().locator('.turn.assistant .message-text').last();

  async function selectModel(model: string): Promise<void> {
    const combobox = page.getByRole('combobox', { name: 'Model', exact: true });
    await combobox.locator(`option[value="${model}"]`).waitFor({ state: 'attached' });
    await combobox.selectOption(model);
  }

  async function fillNumber(name: string, value: string): Promise<void> {
    await page.getByRole('spinbutton', { name, exact: true }).fill(value);
  }

  it('is served at /console with a strict CSP, hashed assets and JavaScript within its budget', async () => {
    for (const path of ['/console', '/console/']) {
      const res = await fetch(`${stack.baseUrl}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("style-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe-inline');
      const html = await res.text();
      // Nothing inline: every script and stylesheet is a file of this origin.
      expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
      expect(html).not.toMatch(/<style|\sstyle=/);
      const scripts = [...html.matchAll(/<script[^>]*src="([^"]+)"/g)].map((m) => m[1]!);
      expect(scripts.length).toBeGreaterThan(0);
      let gzipped = 0;
      for (const src of scripts) {
        expect(src).toMatch(/^\/console\/assets\/console-[A-Z0-9]{8}\.js$/);
        const asset = await fetch(`${stack.baseUrl}${src}`);
        expect(asset.status).toBe(200);
        expect(asset.headers.get('cache-control')).toContain('immutable');
        gzipped += gzipSync(Buffer.from(await asset.arrayBuffer()), { level: 9 }).length;
      }
      expect(gzipped).toBeLessThanOrEqual(CONSOLE_JS_BUDGET_BYTES);
    }
    const missing = await fetch(`${stack.baseUrl}/console/assets/nothing-here.js`);
    expect(missing.status).toBe(404);
  });

  it('streams a chat: the answer grows in several steps before the end, then shows TTFT, tokens/s and usage', async () => {
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    await page.goto(`${stack.baseUrl}/console`);
    await textbox('API key').fill(stack.apiKey);
    await nav('Chat').click();
    await selectModel('sim-chat-words');
    await textbox('System prompt').fill('You are a terse assistant.');
    await fillNumber('Max tokens', '30');
    await fillNumber('Temperature', '0.7');
    // Records the answer's length at every change, and whether the end (the statistics) was shown yet.
    await page.evaluate(RECORD_ANSWER_STEPS);
    await textbox('Message').fill('Tell me about lighthouses');
    await textbox('Message').press('Enter'); // the keyboard sends
    const stats = page.getByRole('status', { name: 'Stream statistics' });
    await stats.waitFor({ timeout: 20_000 });
    const steps = await page.evaluate<{ length: number; ended: boolean }[]>('window.answerSteps');
    const growing = steps.filter((s) => !s.ended && s.length > 0);
    expect(growing.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < growing.length; i++)
      expect(growing[i]!.length).toBeGreaterThan(growing[i - 1]!.length);
    await expect(stats.textContent()).resolves.toMatch(/Time to first token\s*:?\s*\d+ ms/);
    await expect(stats.textContent()).resolves.toMatch(/\d+(\.\d)? tok\/s/);
    await expect(stats.textContent()).resolves.toMatch(/\d+ prompt \+ 30 completion = \d+/);
    expect((await lastAnswer().textContent())!.length).toBeGreaterThan(10);

    // "Copy as curl" and "Copy as openai SDK code": the request on screen, never the key.
    await button('Copy as curl').click();
    const curl = (await page.getByLabel('curl command').textContent()) ?? '';
    expect(curl).toContain('$OPENAI_API_KEY');
    expect(curl).toContain('"model":"sim-chat-words"');
    expect(curl).toContain('"max_tokens":30');
    expect(curl).toContain('"include_usage":true');
    expect(curl).not.toContain(stack.apiKey);
    await button('Copy as openai SDK code').click();
    const sdk = (await page.getByLabel('openai SDK code').textContent()) ?? '';
    expect(sdk).toContain("import OpenAI from 'openai'");
    expect(sdk).toContain('client.chat.completions.create(');
    expect(sdk).not.toContain(stack.apiKey);
    await expect(page.evaluate('navigator.clipboard.readText()')).resolves.toBe(sdk);
    await screenshot('chat');
    expect(errors).toEqual([]);
  });

  it('Stop ends a stream and the worker cancels its job', async () => {
    const cancelledBefore = valueOf((await scrape(chatMetrics)).samples, 'worker_jobs_total', {
      model: 'sim-chat-words',
      outcome: 'cancelled',
    });
    await page.getByRole('spinbutton', { name: 'Max tokens', exact: true }).fill('');
    await textbox('Message').fill('A long story, please');
    await button('Send').click();
    await waitFor(
      'the first tokens',
      async () => ((await lastAnswer().textContent()) ?? '').length > 20,
      15_000,
    );
    await button('Stop').click();
    const stats = page.getByRole('status', { name: 'Stream statistics' });
    await expect(stats.textContent()).resolves.toMatch(/Outcome\s*:?\s*stopped/);
    const stoppedAt = ((await lastAnswer().textContent()) ?? '').length;
    await waitFor(
      'the worker to count the job as cancelled',
      async () =>
        valueOf((await scrape(chatMetrics)).samples, 'worker_jobs_total', {
          model: 'sim-chat-words',
          outcome: 'cancelled',
        }) > cancelledBefore,
      10_000,
    );
    // 400 words at 25 tokens/s: a job that had gone on would have run for many more seconds.
    const active = valueOf((await scrape(chatMetrics)).samples, 'worker_active_jobs', {
      model: 'sim-chat-words',
    });
    expect(active).toBe(0);
    expect(((await lastAnswer().textContent()) ?? '').length).toBe(stoppedAt);
    await expect(button('Stop').isDisabled()).resolves.toBe(true);
  });

  it('generates images at the requested size, in a grid, with download links', async () => {
    await nav('Images').click();
    await selectModel('sim-image');
    await textbox('Prompt').fill('a lighthouse at dusk');
    await page.getByRole('combobox', { name: 'Size', exact: true }).selectOption('512x512');
    await fillNumber('Number of images', '2');
    await button('Generate').click();
    const images = page.getByRole('list', { name: 'Generated images' }).getByRole('img');
    await waitFor('two images', async () => (await images.count()) === 2, 20_000);
    // Decoded, as the page shows them: their natural size is the PNG's.
    const sizes = await page.evaluate(
      `Promise.all([...document.querySelectorAll('[aria-label="Generated images"] img')].map(
        (img) => img.decode().then(() => [img.naturalWidth, img.naturalHeight])))`,
    );
    expect(sizes).toEqual([
      [512, 512],
      [512, 512],
    ]);
    const link = page.getByRole('link', { name: 'Download image 1' });
    await expect(link.getAttribute('href')).resolves.toMatch(/^blob:/);
    await expect(link.getAttribute('download')).resolves.toBe('image-1.png');
    await screenshot('images');
  });

  it('creates a key, uses it from the playground, edits, disables and revokes it; then the key is refused', async () => {
    await textbox('Admin token').fill(ADMIN_TOKEN);
    await nav('Keys').click();
    await textbox('Name').fill('console-team');
    await textbox('Models').first().fill('sim-chat, sim-chat-words');
    await fillNumber('Requests per minute', '120');
    const expires = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel('Expires after (UTC)').first().fill(expires);
    await button('Create key').click();
    const secretBox = page.getByRole('textbox', { name: 'Secret of console-team' });
    await secretBox.waitFor();
    const secret = await secretBox.inputValue();
    expect(secret).toMatch(/^sk-gw-[A-Za-z0-9_-]{43}$/);
    const row = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'console-team' }) });
    await expect(row.textContent()).resolves.toContain(`120 rpm, until ${expires}`);
    await screenshot('keys');

    await button('Use in playground').click();
    await expect(textbox('API key').inputValue()).resolves.toBe(secret);
    await selectModel('sim-chat');
    await textbox('Message').fill('hello from the new key');
    await button('Send').click();
    await page.getByRole('status', { name: 'Stream statistics' }).waitFor();
    await expect(lastAnswer().textContent()).resolves.toContain('hello from the new key');

    await nav('Keys').click();
    await row.getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('form', { name: 'Edit key' });
    await edit.getByRole('spinbutton', { name: 'Requests per minute' }).fill('60');
    await edit.getByRole('spinbutton', { name: 'Max concurrent' }).fill('2');
    await edit.getByRole('button', { name: 'Save limits' }).click();
    await waitFor('the new limits', async () =>
      ((await row.textContent()) ?? '').includes('60 rpm, 2 at once'),
    );
    await row.getByRole('button', { name: 'Disable' }).click();
    await waitFor('disabled', async () => ((await row.textContent()) ?? '').includes('disabled'));
    await row.getByRole('button', { name: 'Enable' }).click();
    await waitFor('enabled', async () => ((await row.textContent()) ?? '').includes('active'));
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('button', { name: 'Confirm revoke' }).click();
    await waitFor('revoked', async () => ((await row.textContent()) ?? '').includes('revoked'));

    await nav('Chat').click();
    await textbox('Message').fill('am I still let in?');
    await button('Send').click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    await expect(alert.textContent()).resolves.toMatch(/^401 invalid_api_key: /);
    await screenshot('chat-refused');
    await textbox('API key').fill(stack.apiKey);
  });

  it('shows usage per key, model and day, and it moves after requests', async () => {
    await nav('Usage').click();
    const totals = page.getByRole('status', { name: 'Usage totals' });
    await totals.waitFor();
    const requestsIn = async () => Number(/^(\d+) requests/.exec((await totals.textContent()) ?? '')?.[1]);
    const before = await requestsIn();
    expect(before).toBeGreaterThan(0); // the new key's chat above
    await expect(page.getByRole('table', { name: /Usage per key/ }).textContent()).resolves.toContain(
      'console-team',
    );

    await nav('Chat').click();
    await selectModel('sim-chat');
    await fillNumber('n', '2');
    await textbox('Message').fill('count me');
    await button('Send').click();
    await page.getByRole('status', { name: 'Stream statistics' }).waitFor();
    // n = 2: both choices, side by side, each with the echo.
    const choices = conversation().locator('.turn.assistant').last().locator('.choice');
    await expect(choices.allTextContents()).resolves.toEqual(['Choice 1count me', 'Choice 2count me']);
    await fillNumber('n', '1');

    await nav('Usage').click();
    await waitFor('usage to move', async () => {
      await button('Refresh').click();
      return (await requestsIn()) > before;
    });
    expect(await page.locator('.chart rect').count()).toBeGreaterThan(0);
    await page.getByRole('combobox', { name: 'Chart' }).selectOption('requests');
    await screenshot('usage');
  });

  it('shows models live: workers, queue depth, in flight and error rate', async () => {
    const api = await fetch(`${stack.baseUrl}/admin/models`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(api.status).toBe(200);
    const body = (await api.json()) as { data: { id: string; workers: number; error_rate: number | null }[] };
    // As the API document describes it.
    const document = (await (await fetch(`${stack.baseUrl}/openapi.json`)).json()) as ConstructorParameters<
      typeof OpenApiSchemas
    >[0];
    expect(new OpenApiSchemas(document).problems('ModelStatusList', body)).toEqual([]);
    expect(body.data.map((m) => m.id)).toEqual(['sim-chat', 'sim-chat-words', 'sim-image']);
    expect(body.data.every((m) => m.workers === 1)).toBe(true);

    // A stream in flight while the view is open shows up in the table without reloading the page.
    const controller = new AbortController();
    const stream = await stack.post(
      '/v1/chat/completions',
      { model: 'sim-chat-words', stream: true, messages: [{ role: 'user', content: 'keep going' }] },
      { signal: controller.signal },
    );
    try {
      await nav('Models').click();
      const row = page
        .getByRole('row')
        .filter({ has: page.getByRole('rowheader', { name: 'sim-chat-words' }) });
      const cells = async (r: Locator) => (await r.getByRole('cell').allTextContents()).map((t) => t.trim());
      await waitFor('one job in flight', async () => (await cells(row))[3] === '1', 15_000);
      expect((await cells(row))[1]).toMatch(/^1/); // one worker
      await screenshot('models');
    } finally {
      controller.abort();
      await stream.body?.cancel().catch(() => undefined);
    }
  });

  it('runs a batch: uploads a JSONL file, shows its progress, downloads its results, cancels another', async () => {
    const line = (customId: string, model: string, maxTokens = 4) =>
      JSON.stringify({
        custom_id: customId,
        method: 'POST',
        url: '/v1/chat/completions',
        body: { model, max_tokens: maxTokens, messages: [{ role: 'user', content: `about ${customId}` }] },
      });
    const ids = ['one', 'two', 'three', 'four', 'five'];
    const input = [...ids.map((id) => line(id, 'sim-chat')), line('no-such-model', 'nope')].join('\n') + '\n';

    await nav('Batches').click();
    await page.getByRole('heading', { name: 'Batches', level: 1 }).waitFor();
    await page.getByLabel('Input file (JSONL)').setInputFiles({
      name: 'requests.jsonl',
      mimeType: 'application/jsonl',
      buffer: Buffer.from(input),
    });
    await page.getByRole('combobox', { name: 'Endpoint' }).selectOption('/v1/chat/completions');
    await button('Create batch').click();

    const table = page.getByRole('table', { name: 'Batches of this API key' });
    const row = table.getByRole('row').nth(1); // the newest batch first
    await waitFor(
      'the batch to complete in the view',
      async () => ((await row.textContent()) ?? '').includes('completed'),
      30_000,
    );
    const batchId = ((await row.getByRole('rowheader').locator('code').textContent()) ?? '').trim();
    expect(batchId).toMatch(/^batch_/);
    await expect(row.textContent()).resolves.toContain('6 / 6 (100 %)');
    const bar = row.getByRole('progressbar', { name: `Progress of ${batchId}` });
    await expect(bar.getAttribute('value')).resolves.toBe('6');
    await screenshot('batches');

    const saved = async (name: string) => {
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        row.getByRole('button', { name }).click(),
      ]);
      const path = await download.path();
      const text = await readFile(path, 'utf8');
      return {
        file: download.suggestedFilename(),
        ids: text
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => (JSON.parse(l) as { custom_id: string }).custom_id)
          .sort(),
      };
    };
    await expect(saved('Download output')).resolves.toEqual({
      file: `${batchId}.output.jsonl`,
      ids: [...ids].sort(),
    });
    await expect(saved('Download errors')).resolves.toEqual({
      file: `${batchId}.errors.jsonl`,
      ids: ['no-such-model'],
    });

    // A batch of slow lines is cancelled from its row (with a confirmation).
    const slow =
      Array.from({ length: 3 }, (_v, i) => line(`slow-${i}`, 'sim-chat-words', 200)).join('\n') + '\n';
    await page.getByLabel('Input file (JSONL)').setInputFiles({
      name: 'slow.jsonl',
      mimeType: 'application/jsonl',
      buffer: Buffer.from(slow),
    });
    await button('Create batch').click();
    await waitFor('the second batch in the list', async () => (await table.getByRole('row').count()) === 3);
    const newest = table.getByRole('row').nth(1);
    await newest.getByRole('button', { name: 'Cancel batch' }).click();
    await newest.getByRole('button', { name: 'Confirm cancel' }).click();
    await waitFor('the batch to be cancelling', async () =>
      /cancell(ing|ed)/.test((await newest.textContent()) ?? ''),
    );
    await expect(newest.getByRole('button', { name: 'Cancel batch' }).count()).resolves.toBe(0);
  });

  it('is usable from the keyboard, with a visible focus', async () => {
    await nav('Chat').click();
    await page.reload(); // the credentials stay (sessionStorage), focus starts at the top
    await textbox('API key').waitFor();
    // From the top: the skip link, the two credentials and their Show buttons, then the views.
    const focusOrder: string[] = [];
    let focused = '';
    for (let i = 0; i < 17 && focused !== 'Models'; i++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate<string>(
        'document.activeElement?.getAttribute("aria-label") || document.activeElement?.id || document.activeElement?.textContent || ""',
      );
      focusOrder.push(focused);
    }
    expect(focusOrder).toEqual([
      'Skip to content',
      'api-key',
      'Show API key',
      'admin-token',
      'Show Admin token',
      'Chat',
      'Images',
      'Embeddings',
      'Batches',
      'Keys',
      'Teams',
      'Usage',
      'Models',
    ]);
    expect(focused).toBe('Models');
    await page.keyboard.press('Enter');
    await waitFor('the Models view', () =>
      page.getByRole('heading', { name: 'Models', level: 1 }).isVisible(),
    );
    const outline = await page.evaluate<string>('getComputedStyle(document.activeElement).outlineStyle');
    expect(outline).not.toBe('none');
  });

  it('fits a 375 px wide screen without horizontal scrolling, in every view', async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    for (const view of ['Chat', 'Images', 'Batches', 'Keys', 'Teams', 'Usage', 'Models']) {
      await nav(view).click();
      await page.waitForTimeout(100);
      const width = await page.evaluate<number>('document.documentElement.scrollWidth');
      expect({ view, width: Math.min(width, 375) }).toEqual({ view, width });
      if (view === 'Chat' || view === 'Keys') await screenshot(`${view.toLowerCase()}-375px`);
    }
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('keeps credentials out of URLs, cookies and logs', async () => {
    expect(page.url()).not.toContain(stack.apiKey);
    expect(page.url()).not.toContain(ADMIN_TOKEN);
    await expect(page.evaluate('document.cookie')).resolves.toBe('');
    const stored = await page.evaluate('Object.keys(sessionStorage).sort()');
    expect(stored).toEqual(['mgw-console.admin-token', 'mgw-console.api-key']);
    await expect(page.evaluate('Object.keys(localStorage)')).resolves.toEqual([]);
    const logs = stack.logs('gateway');
    expect(logs).not.toContain(stack.apiKey);
    expect(logs).not.toContain(ADMIN_TOKEN);
  });
});
