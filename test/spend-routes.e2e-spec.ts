import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import OpenAI, { toFile } from 'openai';
import { collectSse } from './support/sse';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const runFile = promisify(execFile);
const CLI = resolve(__dirname, '..', 'dist/apps/keys-cli/src/main.js');
const ADMIN_TOKEN = `adm-${randomBytes(16).toString('hex')}`;
/** Micro-units per token and per image: each answer's cost is its usage times these, exactly. */
const IN = 1000;
const OUT = 2000;
const EMBED = 300;
const IMAGE = 10_000;
const CATALOG = {
  currency: 'USD',
  models: [
    {
      id: 'sim-chat',
      type: 'chat',
      owned_by: 'e2e',
      backend: { kind: 'simulator', mode: 'echo' },
      pricing: { inputPerMillion: IN, outputPerMillion: OUT, batchFactor: 0.5 },
    },
    {
      id: 'sim-embed',
      type: 'embedding',
      owned_by: 'e2e',
      dimensions: 8,
      backend: { kind: 'simulator' },
      pricing: { embeddingPerMillion: EMBED },
    },
    {
      id: 'sim-image',
      type: 'image',
      owned_by: 'e2e',
      backend: { kind: 'simulator' },
      pricing: { perImage: { '256x256': IMAGE / 1_000_000 } },
    },
  ],
};

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Every route's spend through the real processes (issue 35, "every route's spend counted"): for each, the
 * spend its key and its team recorded — their budgets and /admin/usage — is the answers' usage times the
 * catalog's prices to the micro-unit, and a budget at its end refuses the route before it queues.
 */
describe('spend per route: counted exactly under the key and its team, refused when spent', () => {
  let stack: Stack;
  let dir: string;

  async function call(token: string, method: string, path: string, body?: unknown, headers = {}) {
    const res = await fetch(`${stack.baseUrl}${path}`, {
      method,
      headers: {
        ...(token === '' ? {} : { authorization: `Bearer ${token}` }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: Json;
    try {
      parsed = JSON.parse(text) as Json;
    } catch {
      parsed = { text };
    }
    return { status: res.status, headers: res.headers, body: parsed };
  }

  const admin = (method: string, path: string, body?: unknown) => call(ADMIN_TOKEN, method, path, body);
  const budget = (spend: number) => ({ currency: 'USD', spend, period: 'month' });

  /** A team with a roomy budget and a key in it with its own. */
  async function member(name: string) {
    const team = await admin('POST', '/admin/teams', { name, budget: budget(1000) });
    expect(team.status).toBe(201);
    const key = await admin('POST', '/admin/keys', { name, team_id: team.body.id, budget: budget(1000) });
    expect(key.status).toBe(201);
    return { teamId: team.body.id as string, keyId: key.body.id as string, secret: key.body.key as string };
  }

  /** A budget's hash once none of its reservations is left: every job settled. */
  async function settled(hash: string): Promise<Record<string, string>> {
    return waitFor(`every reservation of ${hash} settled`, async () => {
      const fields = await stack.redis.hgetall(hash);
      return Object.keys(fields).some((field) => field.startsWith('r:')) ? null : fields;
    });
  }

  /** The key's and its team's spend agree with `micros`, and so does /admin/usage (under the team). */
  async function expectSpent(who: { teamId: string; keyId: string }, micros: number) {
    const keyBudget = await settled(`${stack.namespace}:limits:${who.keyId}:budget`);
    const teamBudget = await settled(`${stack.namespace}:limits:team:${who.teamId}:budget`);
    expect([Number(keyBudget.spent ?? 0), Number(teamBudget.spent ?? 0)]).toEqual([micros, micros]);
    const usage = await admin('GET', `/admin/usage?key=${who.keyId}`);
    expect(usage.status).toBe(200);
    expect(usage.body.currency).toBe('USD');
    expect(Math.round(usage.body.totals.cost * 1_000_000)).toBe(micros);
    for (const row of usage.body.data) expect(row.team_id).toBe(who.teamId);
    const byTeam = await admin('GET', `/admin/usage?team=${who.teamId}&group_by=team`);
    expect(byTeam.body.data).toHaveLength(micros === 0 && byTeam.body.data.length === 0 ? 0 : 1);
    expect(Math.round(byTeam.body.totals.cost * 1_000_000)).toBe(micros);
  }

  /** Leaves the key's budget with less than a request can cost: the next one is refused. */
  async function exhaust(who: { keyId: string }) {
    const spent = Number(
      (await stack.redis.hget(`${stack.namespace}:limits:${who.keyId}:budget`, 'spent')) ?? 0,
    );
    const res = await admin('PATCH', `/admin/keys/${who.keyId}`, {
      budget: budget((spent + 1) / 1_000_000),
    });
    expect(res.status).toBe(200);
  }

  function expectQuotaRefusal(res: { status: number; body: Json }) {
    expect(res.status).toBe(429);
    expect(res.body.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
  }

  const chatCost = (usage: Json): number =>
    Number(usage.prompt_tokens) * IN + Number(usage.completion_tokens) * OUT;
  const responseCost = (usage: Json): number =>
    Number(usage.input_tokens) * IN + Number(usage.output_tokens) * OUT;
  const chat = (content: string) => ({
    model: 'sim-chat',
    max_tokens: 8,
    messages: [{ role: 'user', content }],
  });

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: CATALOG,
      with: ['embedding-worker'],
      env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
      waitForModels: ['sim-chat', 'sim-embed', 'sim-image'],
    });
    dir = await mkdtemp(join(tmpdir(), 'spend-routes-e2e-'));
  });

  afterAll(async () => {
    await stack?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('chat completions', async () => {
    const who = await member('chat');
    let micros = 0;
    for (const i of [1, 2]) {
      const res = await call(who.secret, 'POST', '/v1/chat/completions', chat(`hello ${i}`));
      expect(res.status).toBe(200);
      micros += chatCost(res.body.usage as Json);
    }
    await expectSpent(who, micros);
    await exhaust(who);
    expectQuotaRefusal(await call(who.secret, 'POST', '/v1/chat/completions', chat('more')));
  });

  it('chat completions, streamed', async () => {
    const who = await member('stream');
    const res = await fetch(`${stack.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${who.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...chat('stream me'), stream: true, stream_options: { include_usage: true } }),
    });
    expect(res.status).toBe(200);
    const events = await collectSse(res.body!);
    const last = events
      .filter((data) => data !== '[DONE]')
      .map((data) => JSON.parse(data) as Json)
      .find((chunk) => chunk.usage);
    expect(last?.usage).toBeDefined();
    await expectSpent(who, chatCost(last!.usage as Json));
    await exhaust(who);
    expectQuotaRefusal(
      await call(who.secret, 'POST', '/v1/chat/completions', { ...chat('again'), stream: true }),
    );
  });

  it('Responses: a previous_response_id chain of two turns, and a background response', async () => {
    const who = await member('responses');
    const first = await call(who.secret, 'POST', '/v1/responses', {
      model: 'sim-chat',
      input: 'turn one',
      max_output_tokens: 16,
    });
    expect(first.status).toBe(200);
    const second = await call(who.secret, 'POST', '/v1/responses', {
      model: 'sim-chat',
      input: 'turn two',
      previous_response_id: first.body.id,
      max_output_tokens: 16,
    });
    expect(second.status).toBe(200);
    const queued = await call(who.secret, 'POST', '/v1/responses', {
      model: 'sim-chat',
      input: 'in the background',
      background: true,
      max_output_tokens: 16,
    });
    expect(queued.status).toBe(200);
    const done = await waitFor('the background response to complete', async () => {
      const res = await call(who.secret, 'GET', `/v1/responses/${queued.body.id}`);
      return res.body.status === 'completed' ? res.body : null;
    });
    const micros = [first.body, second.body, done].reduce(
      (sum, r: Json) => sum + responseCost(r.usage as Json),
      0,
    );
    await expectSpent(who, micros);
    await exhaust(who);
    expectQuotaRefusal(
      await call(who.secret, 'POST', '/v1/responses', {
        model: 'sim-chat',
        input: 'turn three',
        previous_response_id: second.body.id,
      }),
    );
    expectQuotaRefusal(
      await call(who.secret, 'POST', '/v1/responses', { model: 'sim-chat', input: 'bg', background: true }),
    );
  });

  it('Messages, and count_tokens (free)', async () => {
    const who = await member('messages');
    const anthropic = { 'x-api-key': who.secret, 'anthropic-version': '2023-06-01' };
    const body = { model: 'sim-chat', max_tokens: 8, messages: [{ role: 'user', content: 'hi there' }] };
    const res = await call('', 'POST', '/v1/messages', body, anthropic);
    expect(res.status).toBe(200);
    const micros = responseCost(res.body.usage as Json);
    const count = await call(
      '',
      'POST',
      '/v1/messages/count_tokens',
      { model: 'sim-chat', messages: body.messages },
      anthropic,
    );
    expect(count.status).toBe(200);
    expect(count.body.input_tokens).toBeGreaterThan(0);
    await expectSpent(who, micros);
    await exhaust(who);
    const refused = await call('', 'POST', '/v1/messages', body, anthropic);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    // Counting costs nothing, so a spent budget does not stop it.
    const free = await call(
      '',
      'POST',
      '/v1/messages/count_tokens',
      { model: 'sim-chat', messages: body.messages },
      anthropic,
    );
    expect(free.status).toBe(200);
    await expectSpent(who, micros);
  });

  it('embeddings', async () => {
    const who = await member('embeddings');
    const res = await call(who.secret, 'POST', '/v1/embeddings', {
      model: 'sim-embed',
      input: ['the first text', 'and a second one'],
    });
    expect(res.status).toBe(200);
    await expectSpent(who, res.body.usage.prompt_tokens * EMBED);
    await exhaust(who);
    expectQuotaRefusal(await call(who.secret, 'POST', '/v1/embeddings', { model: 'sim-embed', input: 'x' }));
  });

  it('images', async () => {
    const who = await member('images');
    const res = await call(who.secret, 'POST', '/v1/images/generations', {
      model: 'sim-image',
      prompt: 'a lighthouse',
      n: 2,
      size: '256x256',
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(2);
    await expectSpent(who, 2 * IMAGE);
    await exhaust(who);
    expectQuotaRefusal(
      await call(who.secret, 'POST', '/v1/images/generations', {
        model: 'sim-image',
        prompt: 'another',
        size: '256x256',
      }),
    );
  });

  it('a batch line, at the batch factor, in /admin/usage and the budgets of its key and team', async () => {
    const who = await member('batch');
    const client = new OpenAI({ apiKey: who.secret, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
    const lines = [0, 1].map((i) => ({
      custom_id: `line-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: chat(`batch line ${i}`),
    }));
    const text = lines.map((line) => JSON.stringify(line)).join('\n') + '\n';
    const file = await client.files.create({
      file: await toFile(Buffer.from(text), 'in.jsonl'),
      purpose: 'batch',
    });
    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const batch = await waitFor(
      'the batch to complete',
      async () => {
        const b = await client.batches.retrieve(created.id);
        return b.status === 'completed' ? b : null;
      },
      60_000,
    );
    expect(batch.request_counts).toMatchObject({ completed: 2, failed: 0 });
    const output = await (await client.files.content(batch.output_file_id!)).text();
    const micros = output
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Json)
      .reduce((sum, line) => sum + chatCost(line.response.body.usage as Json) / 2, 0);
    await waitFor('the lines recorded', async () => {
      const usage = await admin('GET', `/admin/usage?key=${who.keyId}`);
      return usage.body.totals.requests === 2;
    });
    await expectSpent(who, micros);
    const usage = await admin('GET', `/admin/usage?key=${who.keyId}`);
    expect(Math.round(usage.body.totals.batch.cost * 1_000_000)).toBe(micros);
    expect(usage.body.totals.batch.requests).toBe(2);
  });

  it('the CLI sets budgets and prints a team’s usage with its cost', async () => {
    const catalogPath = join(dir, 'catalog.json');
    await writeFile(catalogPath, JSON.stringify(CATALOG));
    const cli = async (...args: string[]) => {
      const { stdout } = await runFile(process.execPath, [CLI, ...args], {
        env: {
          PATH: process.env.PATH ?? '',
          REDIS_URL: stack.redisUrl,
          KEY_PREFIX: stack.namespace,
          CATALOG_PATH: catalogPath,
        },
      });
      return JSON.parse(stdout) as Json;
    };
    const team = await cli(
      'team',
      'create',
      '--name',
      'cli',
      '--budget-spend',
      '5',
      '--budget-period',
      'month',
    );
    expect(team.budget).toMatchObject({ currency: 'USD', spend: 5, period: 'month', soft_threshold: 0.8 });
    const key = await cli(
      'create',
      '--name',
      'cli-key',
      '--team',
      String(team.id),
      '--budget-tokens',
      '100000',
      '--budget-period',
      'day',
      '--soft-threshold',
      '0.5',
    );
    expect(key.budget).toMatchObject({ tokens: 100000, period: 'day', soft_threshold: 0.5 });
    const answer = await waitFor('the new key to be known to the gateway', async () => {
      const res = await call(String(key.key), 'POST', '/v1/chat/completions', chat('from the cli'));
      return res.status === 200 ? res.body : null;
    });
    const micros = chatCost(answer.usage as Json);
    await settled(`${stack.namespace}:limits:team:${team.id}:budget`);
    const usage = await cli('usage', '--team', String(team.id), '--group-by', 'team,model');
    expect(usage).toMatchObject({ currency: 'USD', team: team.id, group_by: ['team', 'model'] });
    expect(usage.data).toEqual([
      expect.objectContaining({
        team_id: team.id,
        key_id: null,
        model: 'sim-chat',
        requests: 1,
        cost: micros / 1e6,
      }),
    ]);
    const updated = await cli('team', 'update', String(team.id), '--budget-period', 'none');
    expect(updated.budget).toBeNull();
  });
});
