import { randomBytes } from 'node:crypto';
import { freePort } from './support/free-port';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const ADMIN_TOKEN = `adm-${randomBytes(16).toString('hex')}`;
const CATALOG = {
  models: [
    { id: 'sim-chat', type: 'chat', owned_by: 'e2e', backend: { kind: 'simulator', mode: 'echo' } },
    { id: 'other-chat', type: 'chat', owned_by: 'e2e', backend: { kind: 'simulator', mode: 'echo' } },
    {
      id: 'slow-chat',
      type: 'chat',
      owned_by: 'e2e',
      backend: { kind: 'simulator', mode: 'echo', ttftMs: 2500 },
    },
  ],
};

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/**
 * Teams through the real processes, two gateways on one Redis: a team's rpm and max_concurrent hold for all
 * its keys together across both, its scope narrows its keys', and a team's admin token manages its own
 * team's keys and nothing else.
 */
describe('teams: shared limits across two gateways, scope, and team admin tokens', () => {
  let stack: Stack;
  let a: string;
  let b: string;

  async function call(
    base: string,
    token: string,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }
  const admin = (method: string, path: string, body?: unknown) => call(a, ADMIN_TOKEN, method, path, body);

  async function createTeam(spec: Record<string, unknown>): Promise<string> {
    const res = await admin('POST', '/admin/teams', {
      name: `team-${randomBytes(3).toString('hex')}`,
      ...spec,
    });
    expect(res.status).toBe(201);
    return res.body.id as string;
  }

  async function createKey(spec: Record<string, unknown>): Promise<{ id: string; key: string }> {
    const res = await admin('POST', '/admin/keys', {
      name: `key-${randomBytes(3).toString('hex')}`,
      ...spec,
    });
    expect(res.status).toBe(201);
    return { id: res.body.id as string, key: res.body.key as string };
  }

  const chat = (base: string, key: string, model = 'sim-chat') =>
    call(base, key, 'POST', '/v1/chat/completions', {
      model,
      max_tokens: 4,
      messages: [{ role: 'user', content: 'hi' }],
    });

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: CATALOG,
      env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
      appEnv: { 'chat-worker': { WORKER_CONCURRENCY: '8' } },
      without: ['image-worker'],
      waitForModels: ['sim-chat', 'other-chat', 'slow-chat'],
    });
    a = stack.baseUrl;
    const portB = await freePort();
    b = `http://127.0.0.1:${portB}`;
    stack.spawnExtra('gateway:b', { PORT: String(portB) });
    await waitFor('gateway B', async () => {
      const res = await fetch(`${b}/v1/models`, { headers: stack.headers() }).catch(() => null);
      return res?.ok ? true : undefined;
    });
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it("admits exactly the team's rpm over its keys on both gateways", async () => {
    const team = await createTeam({ rpm: 6 });
    const keys = await Promise.all([0, 1, 2].map(() => createKey({ team_id: team })));
    const answers = await Promise.all(
      Array.from({ length: 18 }, (_, i) => chat(i % 2 === 0 ? a : b, keys[i % 3]!.key)),
    );
    expect(answers.filter((r) => r.status === 200)).toHaveLength(6);
    const refused = answers.filter((r) => r.status !== 200);
    expect(refused).toHaveLength(12);
    for (const { status, body } of refused) {
      expect(status).toBe(429);
      expect((body as unknown as ErrorBody).error).toMatchObject({ code: 'rate_limit_exceeded' });
      expect((body as unknown as ErrorBody).error.message).toContain("of this key's team");
    }
  }, 30_000);

  it("admits exactly the team's max_concurrent over its keys on both gateways, and frees it after", async () => {
    const team = await createTeam({ max_concurrent: 2 });
    const keys = await Promise.all([0, 1].map(() => createKey({ team_id: team })));
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => chat(i % 2 === 0 ? a : b, keys[i % 2]!.key, 'slow-chat')),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 429, 429, 429, 429, 429, 429]);
    const refused = answers.find((r) => r.status === 429)!.body as unknown as ErrorBody;
    expect(refused.error.message).toContain("this API key's team");
    expect((await chat(b, keys[0]!.key)).status).toBe(200);
  }, 30_000);

  it("narrows a key's scope to its team's, and a PATCH of the team reaches every gateway", async () => {
    const team = await createTeam({ models: ['sim-chat'] });
    const scoped = await createKey({ team_id: team, models: ['sim-chat', 'other-chat'] });
    const open = await createKey({ team_id: team });
    for (const key of [scoped.key, open.key]) {
      expect((await chat(a, key)).status).toBe(200);
      const denied = await chat(b, key, 'other-chat');
      expect(denied.status).toBe(404);
      expect((denied.body as unknown as ErrorBody).error.code).toBe('model_not_found');
    }
    expect((await admin('PATCH', `/admin/teams/${team}`, { models: null })).status).toBe(200);
    await waitFor('the wider scope on both gateways', async () => {
      const answers = await Promise.all([chat(a, open.key, 'other-chat'), chat(b, open.key, 'other-chat')]);
      return answers.every((r) => r.status === 200);
    });
  }, 30_000);

  it('manages teams and refuses bad input with errors naming the field', async () => {
    const team = await createTeam({ rpm: 100, tpm: 10_000, max_concurrent: 4, priority: 'low', weight: 3 });
    const shown = await admin('GET', `/admin/teams/${team}`);
    expect(shown).toMatchObject({
      status: 200,
      body: { id: team, object: 'team', rpm: 100, max_concurrent: 4, priority: 'low', weight: 3, keys: 0 },
    });
    const listed = await admin('GET', '/admin/teams');
    expect((listed.body.data as { id: string }[]).some((t) => t.id === team)).toBe(true);

    const bad: [string, string, Record<string, unknown>, string][] = [
      ['POST', '/admin/teams', { name: 'x', rpm: -1 }, 'rpm'],
      ['POST', '/admin/teams', { name: 'x', tpm: 'ten' }, 'tpm'],
      ['POST', '/admin/teams', { name: 'x', budget: 5 }, 'budget'],
      ['PATCH', `/admin/teams/${team}`, { max_concurrent: 0 }, 'max_concurrent'],
      ['POST', '/admin/keys', { name: 'x', team_id: `team_${'0'.repeat(24)}` }, 'team_id'],
      ['POST', '/admin/keys', { name: 'x', team_id: 'search' }, 'team_id'],
    ];
    for (const [method, path, body, param] of bad) {
      const res = await admin(method, path, body);
      expect([method, path, res.status, (res.body as unknown as ErrorBody).error.param]).toEqual([
        method,
        path,
        400,
        param,
      ]);
    }
    const key = await createKey({});
    const moved = await admin('PATCH', `/admin/keys/${key.id}`, { team_id: `team_${'1'.repeat(24)}` });
    expect(moved.status).toBe(400);
    expect((moved.body as unknown as ErrorBody).error).toMatchObject({ param: 'team_id' });
    expect((moved.body as unknown as ErrorBody).error.message).toContain('no team with id');

    expect((await admin('PATCH', `/admin/keys/${key.id}`, { team_id: team })).body.team_id).toBe(team);
    const refused = await admin('DELETE', `/admin/teams/${team}`);
    expect(refused.status).toBe(409);
    expect((refused.body as unknown as ErrorBody).error).toMatchObject({ code: 'team_not_empty' });
    expect((refused.body as unknown as ErrorBody).error.message).toContain('still has 1 live API key');
    expect((await admin('PATCH', `/admin/keys/${key.id}`, { team_id: null })).body.team_id).toBeNull();
    expect(await admin('DELETE', `/admin/teams/${team}`)).toMatchObject({
      status: 200,
      body: { deleted: true },
    });
    expect((await admin('GET', `/admin/teams/${team}`)).status).toBe(404);
  }, 30_000);

  it("lets a team's admin token manage its team's keys and nothing else", async () => {
    const [mine, theirs] = [await createTeam({}), await createTeam({})];
    const issued = await admin('POST', `/admin/teams/${mine}/tokens`, { name: 'on-call' });
    expect(issued.status).toBe(201);
    const token = issued.body.token as string;
    expect(token).toMatch(/^sk-gwt-/);
    const team = (method: string, path: string, body?: unknown) => call(b, token, method, path, body);

    const created = await team('POST', '/admin/keys', { name: 'ci', rpm: 10 });
    expect(created).toMatchObject({ status: 201, body: { team_id: mine } });
    const own = created.body.id as string;
    expect((await chat(a, created.body.key as string)).status).toBe(200);
    expect(await team('PATCH', `/admin/keys/${own}`, { rpm: 20 })).toMatchObject({ body: { rpm: 20 } });
    const listed = await team('GET', '/admin/keys');
    expect((listed.body.data as { id: string }[]).map((k) => k.id)).toEqual([own]);
    expect((await team('GET', `/admin/teams/${mine}`)).status).toBe(200);

    const other = await createKey({ team_id: theirs });
    const global = await createKey({});
    for (const id of [other.id, global.id]) {
      for (const [method, body] of [['GET'], ['PATCH', { rpm: 1 }], ['DELETE']] as const) {
        const res = await team(method, `/admin/keys/${id}`, body);
        expect([method, id, res.status]).toEqual([method, id, 404]);
      }
    }
    const elsewhere = await team('POST', '/admin/keys', { name: 'x', team_id: theirs });
    expect(elsewhere.status).toBe(403);
    expect((elsewhere.body as unknown as ErrorBody).error.param).toBe('team_id');
    expect((await team('PATCH', `/admin/keys/${own}`, { team_id: null })).status).toBe(403);
    expect((await team('GET', `/admin/teams/${theirs}`)).status).toBe(404);
    for (const [method, path] of [
      ['GET', '/admin/teams'],
      ['POST', '/admin/teams'],
      ['PATCH', `/admin/teams/${mine}`],
      ['POST', `/admin/teams/${mine}/tokens`],
      ['GET', '/admin/models'],
    ]) {
      const res = await team(method!, path!, method === 'GET' ? undefined : { name: 'x' });
      expect([method, path, res.status]).toEqual([method, path, 403]);
      expect((res.body as unknown as ErrorBody).error.code).toBe('insufficient_permissions');
    }
    // Its own team's usage only: the team filter is forced to it; another team's is refused, naming `team`.
    const usage = await team('GET', '/admin/usage');
    expect(usage.status).toBe(200);
    expect(usage.body).toMatchObject({ object: 'usage', team: mine });
    const theirUsage = await team('GET', `/admin/usage?team=${theirs}`);
    expect(theirUsage.status).toBe(403);
    expect((theirUsage.body as unknown as ErrorBody).error.param).toBe('team');
    // Unchanged by any of it.
    expect((await admin('GET', `/admin/keys/${other.id}`)).body).toMatchObject({ revoked_at: null });
    expect((await team('DELETE', `/admin/keys/${own}`)).status).toBe(200);

    const revoked = await admin('DELETE', `/admin/teams/${mine}/tokens/${issued.body.id as string}`);
    expect(revoked.status).toBe(200);
    expect((await team('GET', '/admin/keys')).status).toBe(401);
  }, 30_000);
});
