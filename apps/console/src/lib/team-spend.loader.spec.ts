import type { ApiKeyView, TeamView } from './admin.types';
import { loadTeamSpend } from './team-spend.loader';

const NOW = Date.parse('2026-11-29T12:00:00Z');
const team = { id: 'team_1', created_at: NOW / 1000 - 86_400, budget: null } as TeamView;
const keys = [
  { id: 'key_in', team_id: 'team_1' },
  { id: 'key_out', team_id: null },
] as ApiKeyView[];
const counts = { requests: 1, prompt_tokens: 2, completion_tokens: 3, images: 0 };
const row = (key: string, extra: object = {}) => ({
  key_id: key,
  date: '2026-11-29',
  model: 'm',
  ...counts,
  batch: counts,
  ...extra,
});

describe('loadTeamSpend', () => {
  const realFetch = globalThis.fetch;
  afterEach(() => {
    globalThis.fetch = realFetch;
  });

  it("asks for the team's usage over the charted days", async () => {
    const calls: string[] = [];
    globalThis.fetch = jest.fn((path: string) => {
      calls.push(path);
      const body = {
        object: 'usage',
        currency: 'USD',
        data: [row('key_in', { team_id: 'team_1', cost: 0.5 })],
        totals: counts,
      };
      return Promise.resolve(new Response(JSON.stringify(body)));
    }) as unknown as typeof fetch;
    const spend = await loadTeamSpend('t', team, keys, NOW);
    expect(calls).toEqual(['/admin/usage?from=2026-10-31&to=2026-11-29&team=team_1']);
    expect(spend.rows).toHaveLength(1);
  });

  it("falls back to every key's usage, kept to the team's keys, where the gateway does not know `team`", async () => {
    const calls: string[] = [];
    globalThis.fetch = jest.fn((path: string) => {
      calls.push(path);
      if (path.includes('team=')) {
        const refusal = {
          error: {
            message: 'Unrecognized query parameter: team',
            type: 'invalid_request_error',
            param: 'team',
            code: null,
          },
        };
        return Promise.resolve(new Response(JSON.stringify(refusal), { status: 400 }));
      }
      const body = { object: 'usage', data: [row('key_in'), row('key_out')], totals: counts };
      return Promise.resolve(new Response(JSON.stringify(body)));
    }) as unknown as typeof fetch;
    const spend = await loadTeamSpend('t', team, keys, NOW);
    expect(calls[1]).toBe('/admin/usage?from=2026-10-31&to=2026-11-29');
    expect(spend.rows.map((r) => r.key_id)).toEqual(['key_in']);
  });

  it('passes any other refusal on (a team token the gateway will not show usage to)', async () => {
    globalThis.fetch = jest.fn(() =>
      Promise.resolve(
        new Response(
          JSON.stringify({
            error: { message: 'no', type: 'invalid_request_error', code: 'insufficient_permissions' },
          }),
          { status: 403 },
        ),
      ),
    );
    await expect(loadTeamSpend('t', team, keys, NOW)).rejects.toMatchObject({ status: 403 });
  });
});
