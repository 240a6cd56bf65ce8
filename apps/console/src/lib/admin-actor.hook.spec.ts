import { adminActorOf } from './admin-actor.hook';

const TEAM = 'team_0123456789abcdef01234567';
const refused = {
  error: {
    message: `A team admin token manages its team's keys (/admin/keys) and reads its team (GET /admin/teams/${TEAM}) only: GET /admin/teams needs the operator's admin token.`,
    type: 'invalid_request_error',
    param: null,
    code: 'insufficient_permissions',
  },
};

function answering(routes: Record<string, [number, unknown]>): jest.Mock {
  return jest.fn((path: string) => {
    const [status, body] = routes[path] ?? [404, { error: { message: 'no', code: 'unknown_url' } }];
    return Promise.resolve(new Response(JSON.stringify(body), { status }));
  });
}

describe('adminActorOf', () => {
  const realFetch = globalThis.fetch;
  afterEach(() => {
    globalThis.fetch = realFetch;
  });

  it("is the operator when the teams' list answers", async () => {
    globalThis.fetch = answering({ '/admin/teams': [200, { object: 'list', data: [] }] });
    await expect(adminActorOf('op')).resolves.toEqual({ kind: 'operator' });
  });

  it("is a team's token when the list is refused, its team read from its keys", async () => {
    const other = 'team_ffffffffffffffffffffffff';
    globalThis.fetch = answering({
      '/admin/teams': [403, refused],
      '/admin/keys': [200, { object: 'list', data: [{ id: 'key_1', team_id: other }] }],
    });
    await expect(adminActorOf('sk-gwt-x')).resolves.toEqual({ kind: 'team', teamId: other });
  });

  it('names the team from the refusal while the team has no keys', async () => {
    globalThis.fetch = answering({
      '/admin/teams': [403, refused],
      '/admin/keys': [200, { object: 'list', data: [] }],
    });
    await expect(adminActorOf('sk-gwt-x')).resolves.toEqual({ kind: 'team', teamId: TEAM });
  });

  it('is unknown for a wrong token or the wrong listener: the views show those errors', async () => {
    globalThis.fetch = answering({
      '/admin/teams': [401, { error: { message: 'bad', code: 'invalid_admin_token' } }],
    });
    await expect(adminActorOf('wrong')).resolves.toEqual({ kind: 'unknown' });
    globalThis.fetch = answering({});
    await expect(adminActorOf('x')).resolves.toEqual({ kind: 'unknown' });
  });
});
