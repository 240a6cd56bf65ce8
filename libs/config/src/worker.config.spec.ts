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

  it('reads the reply flow-control settings: on by default, 0 turns it off, negative is refused', () => {
    const defaults = loadWorkerConfig({}, 'chat');
    expect(defaults.replyBacklogPauseBytes).toBe(2 * 1024 * 1024);
    expect(defaults.replyBacklogMaxPauseMs).toBe(10_000);
    const off = loadWorkerConfig({ REPLY_BACKLOG_BYTES: '0', REPLY_BACKLOG_WAIT_MS: '500' }, 'chat');
    expect(off.replyBacklogPauseBytes).toBe(0);
    expect(off.replyBacklogMaxPauseMs).toBe(500);
    expect(() => loadWorkerConfig({ REPLY_BACKLOG_BYTES: '-1' }, 'chat')).toThrow(/REPLY_BACKLOG_BYTES/);
  });
});
