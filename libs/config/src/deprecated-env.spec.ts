import { withDeprecatedEnv } from './deprecated-env';
import { loadGatewayConfig } from './gateway.config';
import { loadWorkerConfig } from './worker.config';

describe('deprecated environment variables', () => {
  // First: the names are warned about once per process, and the later tests warn through the default.
  it('warns once per name and process, naming the replacement', () => {
    const warnings: string[] = [];
    const warn = (message: string) => warnings.push(message);
    withDeprecatedEnv({ CONCURRENCY_LEASE_MS: '1000' }, warn);
    const env = withDeprecatedEnv({ CONCURRENCY_LEASE_MS: '1000' }, warn);
    expect(env.CONCURRENCY_SLOT_TTL_MS).toBe('1000');
    withDeprecatedEnv({ WORKER_FETCHERS: '2' }, warn);
    expect(warnings).toEqual([
      expect.stringContaining('CONCURRENCY_LEASE_MS is deprecated: set CONCURRENCY_SLOT_TTL_MS instead'),
      expect.stringContaining('WORKER_FETCHERS is deprecated and ignored'),
    ]);
  });

  it('reads an old name under its new one, and the new name wins when both are set', () => {
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    expect(loadGatewayConfig({ WORKER_LEASE_MS: '4500' }).workerSilenceMs).toBe(4500);
    expect(loadGatewayConfig({ CONCURRENCY_LEASE_MS: '9000' }).concurrencySlotTtlMs).toBe(9000);
    expect(loadGatewayConfig({ WORKER_LEASE_MS: '4500', WORKER_SILENCE_MS: '5000' }).workerSilenceMs).toBe(
      5000,
    );
    expect(() => loadWorkerConfig({ WORKER_FETCHERS: '4' }, 'chat')).not.toThrow();
    expect(warn).toHaveBeenCalledTimes(1); // WORKER_LEASE_MS; the others were warned about above
    warn.mockRestore();
  });
});
