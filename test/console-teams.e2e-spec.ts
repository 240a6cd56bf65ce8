import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Page, Request } from 'playwright-core';
import { ConsoleBrowser } from './support/console-browser';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

/**
 * The console's Teams view in a real browser against the real stack with a priced catalog: a team with a
 * budget, a key in it, priced requests, the team's spend page (per-day bars, top keys, budget left with its
 * soft threshold), and the same console logged in with the team's own admin token, which sees only its
 * team. Screenshots go to test/artifacts/console/.
 */

const ARTIFACTS = resolve(__dirname, 'artifacts', 'console');
const ADMIN_TOKEN = `console-teams-${randomBytes(12).toString('hex')}`;
/** Micro-units per token: 1 000 per input token, 2 000 per output token (docs/catalog.md's prices per million). */
const PRICES = { inputPerMillion: 1000, outputPerMillion: 2000 };
const CATALOG = {
  currency: 'USD',
  models: [
    {
      id: 'sim-chat',
      type: 'chat',
      owned_by: 'e2e',
      backend: { kind: 'simulator', mode: 'echo' },
      pricing: PRICES,
    },
  ],
};
/** The team's token budget; the requests below pass its soft threshold and stay within it. */
const TOKEN_BUDGET = 400;
const SOFT_PERCENT = 25;

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
}

describe('web console: teams and spend (chromium)', () => {
  let stack: Stack;
  let browser: ConsoleBrowser;
  let page: Page;
  let teamToken = '';
  let otherKeyName = '';
  const usages: Usage[] = [];

  beforeAll(async () => {
    [stack, browser] = await Promise.all([
      Stack.start({
        catalog: CATALOG,
        env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
        without: ['image-worker'],
        waitForModels: ['sim-chat'],
      }),
      ConsoleBrowser.launch(),
    ]);
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
  const rowOf = (name: string) =>
    page.getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: false }) });
  const admin = async (path: string, token = ADMIN_TOKEN, init: RequestInit = {}) =>
    fetch(`${stack.baseUrl}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    });

  it('creates a team with a budget and a key in it from the console', async () => {
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(`${stack.baseUrl}/console#teams`);
    await textbox('Admin token').fill(ADMIN_TOKEN);
    await page.getByRole('heading', { name: 'Teams', level: 1 }).waitFor();
    const form = page.getByRole('form', { name: 'New team' });
    await form.getByRole('textbox', { name: 'Team name' }).fill('search');
    await form.getByRole('spinbutton', { name: 'Requests per minute' }).fill('600');
    await form.getByRole('spinbutton', { name: 'Weight (1-100)' }).fill('3');
    await form.getByRole('spinbutton', { name: 'Budget spend' }).fill('5');
    await form.getByRole('textbox', { name: 'Currency' }).fill('USD');
    await form.getByRole('spinbutton', { name: 'Budget tokens' }).fill(String(TOKEN_BUDGET));
    await form.getByRole('combobox', { name: 'Budget period' }).selectOption('month');
    await form.getByRole('spinbutton', { name: 'Soft threshold (%)' }).fill(String(SOFT_PERCENT));
    await button('Create team').click();
    const team = rowOf('search');
    await team.waitFor();
    await expect(team.textContent()).resolves.toContain(
      `5 USD and ${TOKEN_BUDGET} tokens per month, warns at ${SOFT_PERCENT} %`,
    );
    await expect(team.textContent()).resolves.toContain('600 rpm');

    // Edit: the weight moves, the rest stays.
    await team.getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('form', { name: 'Edit team' });
    await edit.getByRole('spinbutton', { name: 'Weight (1-100)' }).fill('4');
    await edit.getByRole('button', { name: 'Save team' }).click();
    await waitFor('the new weight', async () => (await team.getByRole('cell').nth(4).textContent()) === '4');

    // A key in the team, with a budget of its own.
    await nav('Keys').click();
    const keyForm = page.getByRole('form', { name: 'New key' });
    await keyForm.getByRole('textbox', { name: 'Name' }).fill('ci');
    await keyForm.getByRole('combobox', { name: 'Team' }).selectOption({ label: 'search' });
    await keyForm.getByRole('spinbutton', { name: 'Budget tokens' }).fill('100000');
    await keyForm.getByRole('combobox', { name: 'Budget period' }).selectOption('day');
    await button('Create key').click();
    const secret = await page.getByRole('textbox', { name: 'Secret of ci' }).inputValue();
    const key = rowOf('ci');
    await expect(key.textContent()).resolves.toContain('search');
    await expect(key.textContent()).resolves.toContain('100,000 tokens per day, warns at 80 %');
    await screenshot('keys-team');

    // Priced requests with the key: their usage (and so their cost) as the answers give it.
    for (let i = 0; i < 12; i++) {
      const used = usages.reduce((sum, u) => sum + u.prompt_tokens + u.completion_tokens, 0);
      if (used >= (TOKEN_BUDGET * SOFT_PERCENT) / 100 + 20) break;
      const res = await fetch(`${stack.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'sim-chat',
          max_tokens: 8,
          messages: [{ role: 'user', content: `spend ${i}` }],
        }),
      });
      expect(res.status).toBe(200);
      usages.push(((await res.json()) as { usage: Usage }).usage);
    }
    // Another team's key, which the team's own token must never see.
    const other = (await (
      await admin('/admin/teams', ADMIN_TOKEN, { method: 'POST', body: JSON.stringify({ name: 'other' }) })
    ).json()) as { id: string };
    otherKeyName = 'other-team-key';
    expect(
      (
        await admin('/admin/keys', ADMIN_TOKEN, {
          method: 'POST',
          body: JSON.stringify({ name: otherKeyName, team_id: other.id }),
        })
      ).status,
    ).toBe(201);
    expect(errors).toEqual([]);
  });

  it("shows the team's spend: bars per day, its top keys and the budget left past the soft threshold", async () => {
    const tokens = usages.reduce((sum, u) => sum + u.prompt_tokens + u.completion_tokens, 0);
    const costMicros = usages.reduce(
      (sum, u) => sum + u.prompt_tokens * 1000 + u.completion_tokens * 2000,
      0,
    );
    expect(tokens).toBeGreaterThanOrEqual((TOKEN_BUDGET * SOFT_PERCENT) / 100);
    expect(tokens).toBeLessThan(TOKEN_BUDGET);
    // What this gateway's usage report gives: with spend reporting, a currency and each row's cost.
    const report = (await (await admin('/admin/usage')).json()) as { currency?: string | null };
    const priced = report.currency !== undefined;

    await nav('Teams').click();
    await rowOf('search').getByRole('button', { name: 'Spend' }).click();
    const spend = page.getByRole('region', { name: 'Spend of search' });
    const topKeys = spend.getByRole('table', { name: 'Top keys of search by spend' });
    const ciRow = topKeys.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'ci' }) });
    await waitFor('the workers to record the requests', async () => {
      await button('Refresh spend').click();
      const cells = await ciRow
        .getByRole('cell')
        .allTextContents()
        .catch(() => []);
      return cells[0] === String(usages.length) && cells[1] === String(tokens);
    });
    const cost = (costMicros / 1e6).toLocaleString('en', { maximumFractionDigits: 6 });
    await expect(ciRow.getByRole('cell').nth(2).textContent()).resolves.toBe(priced ? `${cost} USD` : '—');

    // One bar (one model) today in the tokens chart, and in the spend chart where the gateway prices.
    const today = new Date().toISOString().slice(0, 10);
    const charts = spend.locator('.chart svg[role="img"]');
    await expect(charts.count()).resolves.toBe(priced ? 2 : 1);
    const tokenChart = spend.getByRole('img', { name: /^tokens per day/ });
    await expect(tokenChart.getAttribute('aria-label')).resolves.toContain(`${tokens} tokens in total`);
    await expect(tokenChart.locator('rect title').allTextContents()).resolves.toEqual([
      `${today} · sim-chat: ${tokens} tokens`,
    ]);
    if (priced) {
      await expect(
        spend
          .getByRole('img', { name: /^cost per day/ })
          .locator('rect')
          .count(),
      ).resolves.toBe(1);
    }

    // Budget left in the month: tokens past the soft threshold (the warning colour), spend within it.
    const budget = spend.getByRole('list', { name: 'Budget left' });
    const tokenLine = budget.getByRole('listitem').filter({ hasText: 'Tokens this month' });
    await expect(tokenLine.textContent()).resolves.toContain(
      `${tokens} tokens used of ${TOKEN_BUDGET} tokens · ${TOKEN_BUDGET - tokens} tokens left · past the soft threshold`,
    );
    await expect(tokenLine.getAttribute('class')).resolves.toBe('budget-warn');
    // Runs in the page (a string: this file is type-checked without the DOM's types).
    const warnFill = await page.evaluate<string>(
      `getComputedStyle(document.querySelector('[aria-label="Budget left"] .budget-warn .meter-used')).fill`,
    );
    expect(warnFill).toBe('rgb(180, 83, 9)');
    const spendLine = budget.getByRole('listitem').filter({ hasText: 'Spend this month' });
    if (priced) {
      const left = ((5_000_000 - costMicros) / 1e6).toLocaleString('en', { maximumFractionDigits: 6 });
      await expect(spendLine.textContent()).resolves.toContain(
        `${cost} USD used of 5 USD · ${left} USD left`,
      );
      await expect(spendLine.getAttribute('class')).resolves.toBe('budget-ok');
    } else {
      await expect(spendLine.textContent()).resolves.toContain('spend not reported by this gateway');
    }
    await screenshot('team-spend');
  });

  it("logged in with the team's admin token, sees only its team: its keys, its spend, no operator actions", async () => {
    await nav('Teams').click();
    await rowOf('search').getByRole('button', { name: 'New admin token' }).click();
    teamToken = await textbox('Team admin token').inputValue();
    expect(teamToken).toMatch(/^sk-gwt-/);
    await button('Done').click();

    await textbox('Admin token').fill(teamToken);
    const views = page.getByRole('navigation', { name: 'Views' });
    await waitFor(
      'the operator-only views to go',
      async () => (await views.getByRole('link', { name: 'Models' }).count()) === 0,
    );
    await expect(views.getByRole('link').allTextContents()).resolves.toEqual([
      'Chat',
      'Images',
      'Embeddings',
      'Batches',
      'Keys',
      'Teams',
      'Usage',
    ]);

    // Teams: its own team alone, and its spend; nothing to create, edit or delete.
    await page.getByRole('note').filter({ hasText: "a team's admin token" }).waitFor();
    const table = page.getByRole('table', { name: /^Teams/ });
    await waitFor('its team', async () => (await table.getByRole('rowheader').count()) === 1);
    await expect(table.getByRole('rowheader').textContent()).resolves.toContain('search');
    await expect(page.getByRole('form', { name: 'New team' }).count()).resolves.toBe(0);
    for (const name of ['Edit', 'Delete', 'New admin token']) {
      await expect(table.getByRole('button', { name }).count()).resolves.toBe(0);
    }
    const spend = page.getByRole('region', { name: 'Spend of search' });
    await spend.waitFor();
    // The team's spend where the gateway lets its token read usage; a clear notice where it refuses it.
    const usage = await admin('/admin/usage', teamToken);
    if (usage.ok) {
      await spend
        .getByRole('table', { name: 'Top keys of search by spend' })
        .getByRole('rowheader', { name: 'ci' })
        .waitFor();
    } else {
      const notice = spend.getByRole('status', { name: 'Spend unavailable' });
      await notice.waitFor();
      await expect(notice.textContent()).resolves.toContain(`${usage.status} insufficient_permissions`);
    }
    await screenshot('team-token-teams');

    // Keys: the team's keys only; new keys go to its team.
    await nav('Keys').click();
    const keys = page.getByRole('table', { name: /^Keys/ });
    await waitFor(
      'its keys',
      async () => (await keys.getByRole('rowheader').allTextContents()).join() === 'ci',
    );
    await expect(page.getByRole('textbox', { name: 'Team' }).first().inputValue()).resolves.toBe('search');
    await page.getByRole('form', { name: 'New key' }).getByRole('textbox', { name: 'Name' }).fill('laptop');
    await button('Create key').click();
    await page.getByRole('textbox', { name: 'Secret of laptop' }).waitFor();
    await expect(rowOf('laptop').textContent()).resolves.toContain('search');
    expect(await page.getByText(otherKeyName).count()).toBe(0);

    // Usage: the team's, or a notice (never a blank page) where the gateway refuses it to a team's token.
    await nav('Usage').click();
    if (usage.ok) {
      await page.getByRole('status', { name: 'Usage totals' }).waitFor();
      expect(await page.getByText(otherKeyName).count()).toBe(0);
    } else {
      await expect(page.getByRole('alert').textContent()).resolves.toContain(
        "This gateway does not show usage to a team's admin token",
      );
    }
    // Models, typed in by hand: a notice, not the operator's view.
    await page.goto(`${stack.baseUrl}/console#models`);
    await page.getByText("Models are the operator's").waitFor();
    await screenshot('team-token-models');
  });

  it('deletes a team: refused while it has keys, then gone', async () => {
    // A slow gateway: the new token's actor (and the lists) are read only after the delete was refused. The
    // reads that finish then must not take the refusal's notice away.
    let answer!: () => void;
    const slow = new Promise<void>((resolve) => (answer = resolve));
    const held: Array<Promise<unknown>> = [];
    await page.route('**/admin/teams', async (route) => {
      if (route.request().method() === 'GET') {
        // Waited for below; a browser closed after a failure must not fail the file's other tests too.
        held.push(page.waitForResponse((res) => res.request() === route.request()).catch(() => undefined));
        await slow;
      }
      await route.continue();
    });
    await textbox('Admin token').fill(ADMIN_TOKEN);
    await nav('Teams').click();
    const team = rowOf('search');
    await team.getByRole('button', { name: 'Delete' }).click();
    await team.getByRole('button', { name: 'Confirm delete' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/^409 team_not_empty: /);
    await waitFor('the held reads', () => Promise.resolve(held.length >= 2));
    // Every admin request from now on, until none has been in flight for half a second: the held reads, the
    // actor's, and the reads its actor starts.
    let inFlight = 0;
    let quietSince = performance.now();
    const started = (req: Request) => {
      if (req.url().includes('/admin/')) inFlight++;
    };
    const ended = (req: Request) => {
      if (!req.url().includes('/admin/')) return;
      inFlight--;
      quietSince = performance.now();
    };
    page.on('request', started);
    page.on('requestfinished', ended);
    page.on('requestfailed', ended);
    answer();
    await Promise.all(held);
    await page.unroute('**/admin/teams');
    await waitFor('the reads to end', () =>
      Promise.resolve(inFlight <= 0 && performance.now() - quietSince > 500),
    );
    page.off('request', started).off('requestfinished', ended).off('requestfailed', ended);
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/^409 team_not_empty: /);

    await nav('Teams').click();
    const empty = (await (
      await admin('/admin/teams', ADMIN_TOKEN, { method: 'POST', body: JSON.stringify({ name: 'empty' }) })
    ).json()) as { id: string };
    await page.reload();
    const row = rowOf('empty');
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.getByRole('button', { name: 'Confirm delete' }).click();
    await waitFor('the team to go', async () => (await rowOf('empty').count()) === 0);
    expect((await admin(`/admin/teams/${empty.id}`)).status).toBe(404);
  });
});
