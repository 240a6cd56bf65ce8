import { listenerOfRoute } from './operator-listener';

describe('listenerOfRoute', () => {
  it.each([
    ['/metrics', 'operator'],
    ['/admin/keys', 'operator'],
    ['/admin/keys/:id', 'operator'],
    ['/admin/usage', 'operator'],
    ['/admin/models', 'operator'],
    ['/healthz', 'both'],
    ['/readyz', 'both'],
    ['/console', 'both'],
    ['/console/*', 'both'],
    ['/v1/chat/completions', 'api'],
    ['/v1/models/:model', 'api'],
    ['/docs', 'api'],
    ['/administrator', 'api'],
    ['/metrics-extra', 'api'],
    ['/consoles', 'api'],
  ] as const)('puts %s on %s', (url, role) => {
    expect(listenerOfRoute(url)).toBe(role);
  });
});
