import { loadWorkerConfig } from './worker.config';

describe('worker config', () => {
  it('keeps the environment it was read from, for catalog options that name a variable', () => {
    const config = loadWorkerConfig(
      { UPSTREAM_KEY: 'sk-1', WORKER_CONCURRENCY: '4', UNSET: undefined },
      'chat',
    );
    expect(config.concurrency).toBe(4);
    expect(config.environment.get('UPSTREAM_KEY')).toBe('sk-1');
    expect(config.environment.has('UNSET')).toBe(false);
  });
});
