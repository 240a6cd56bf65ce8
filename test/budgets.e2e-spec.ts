import { randomBytes } from 'node:crypto';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const ADMIN_TOKEN = `adm-${randomBytes(16).toString('hex')}`;
/** 1 000 micro-units per input token, 2 000 per output token: costs are easy to count from the usage. */
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

interface Answer {
  id?: string;
  key?: string;
  budget?: unknown;
  usage?: { prompt_tokens: number; completion_tokens: number };
  error?: { message: string; type: string; param: string | null; code: string | null };
}

/**
 * A key's budget through the real processes: admission reserves, the worker settles each job's real cost
 * from the catalog's prices, the spend recorded is the sum of the answers' costs exactly, and a spent budget
 * answers 429 insufficient_quota (Anthropic's shape on /v1/messages).
 */
describe('budgets: reserved at admission, settled at the real cost, refused when spent', () => {
  let stack: Stack;

  async function call(token: string, method: string, path: string, body?: unknown) {
    const res = await fetch(`${stack.baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Answer };
  }

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: CATALOG,
      env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
      without: ['image-worker'],
      waitForModels: ['sim-chat'],
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it("refuses a budget in another currency than the catalog's, naming the field", async () => {
    const res = await call(ADMIN_TOKEN, 'POST', '/admin/teams', {
      name: 'eur',
      budget: { currency: 'EUR', spend: 10, period: 'month' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ param: 'budget.currency' });
    expect(res.body.error!.message).toContain('prices are in USD, not EUR');
  });

  it('spends exactly the sum of the answers’ costs and refuses with insufficient_quota once spent', async () => {
    const created = await call(ADMIN_TOKEN, 'POST', '/admin/keys', {
      name: 'budgeted',
      budget: { currency: 'USD', spend: 0.2, period: 'month' },
    });
    expect(created.status).toBe(201);
    expect(created.body.budget).toEqual({
      currency: 'USD',
      spend: 0.2,
      tokens: null,
      period: 'month',
      soft_threshold: 0.8,
    });
    const key = created.body.key!;
    let spent = 0;
    let refused: Awaited<ReturnType<typeof call>> | null = null;
    for (let i = 0; i < 100 && refused === null; i++) {
      const res = await call(key, 'POST', '/v1/chat/completions', {
        model: 'sim-chat',
        max_tokens: 4,
        messages: [{ role: 'user', content: `hello ${i}` }],
      });
      if (res.status === 429) refused = res;
      else {
        expect(res.status).toBe(200);
        expect(res.headers.get('x-ratelimit-limit-budget')).toBe('0.2');
        const { prompt_tokens: prompt, completion_tokens: completion } = res.body.usage!;
        spent += prompt * 1000 + completion * 2000;
      }
    }
    expect(refused).not.toBeNull();
    expect(refused!.body.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
    expect(refused!.headers.get('x-ratelimit-budget-warning')).toBe('soft-threshold');
    // Every job settled: no reservation left, and the spend is the answers' costs to the micro-unit.
    const hash = `${stack.namespace}:limits:${created.body.id!}:budget`;
    const budget = await waitFor('every reservation settled', async () => {
      const fields = await stack.redis.hgetall(hash);
      return Object.keys(fields).some((field) => field.startsWith('r:')) ? null : fields;
    });
    expect(Number(budget.spent)).toBe(spent);
    expect(spent).toBeLessThanOrEqual(200_000);

    const messages = await fetch(`${stack.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'sim-chat', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(messages.status).toBe(429);
    expect(await messages.json()).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
  });
});
