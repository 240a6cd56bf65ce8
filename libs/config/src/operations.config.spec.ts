import { loadGatewayConfig } from './gateway.config';
import { ConfigError, loadConfig } from './load-config';
import { RegistryConfig } from './registry.config';
import { loadWorkerConfig } from './worker.config';

function problems(load: () => unknown): string {
  try {
    load();
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('expected the environment to be refused');
}

describe('operations settings', () => {
  it('defaults: metrics on 9464, 30 s drains, no prompts in logs, no announced delay', () => {
    const worker = loadWorkerConfig({}, 'chat');
    expect(worker.metricsPort).toBe(9464);
    expect(worker.drainTimeoutMs).toBe(30_000);
    expect(worker.logPrompts).toBe(false);
    const gateway = loadGatewayConfig({});
    expect(gateway.drainTimeoutMs).toBe(30_000);
    expect(gateway.shutdownDelayMs).toBe(0);
    expect(gateway.logPrompts).toBe(false);
    const registry = loadConfig(RegistryConfig, {});
    expect(registry.metricsPort).toBe(9464);
    expect(registry.queueMetricsCacheMs).toBe(1000);
  });

  it('reads them from the environment, METRICS_PORT=0 turning the port off', () => {
    const worker = loadWorkerConfig(
      { METRICS_PORT: '0', WORKER_DRAIN_TIMEOUT_MS: '1500', LOG_PROMPTS: 'true' },
      'image',
    );
    expect(worker).toMatchObject({ metricsPort: 0, drainTimeoutMs: 1500, logPrompts: true });
    const gateway = loadGatewayConfig({ GATEWAY_DRAIN_TIMEOUT_MS: '0', GATEWAY_SHUTDOWN_DELAY_MS: '5000' });
    expect(gateway).toMatchObject({ drainTimeoutMs: 0, shutdownDelayMs: 5000 });
    expect(loadConfig(RegistryConfig, { QUEUE_METRICS_CACHE_MS: '250' }).queueMetricsCacheMs).toBe(250);
  });

  it.each([
    ['METRICS_PORT', '65536'],
    ['METRICS_PORT', 'metrics'],
    ['WORKER_DRAIN_TIMEOUT_MS', '-1'],
    ['LOG_PROMPTS', 'sometimes'],
  ])('refuses %s=%p on a worker, naming it', (name, value) => {
    expect(problems(() => loadWorkerConfig({ [name]: value }, 'chat'))).toContain(name);
  });

  it.each([
    ['GATEWAY_DRAIN_TIMEOUT_MS', 'soon'],
    ['GATEWAY_SHUTDOWN_DELAY_MS', '-5'],
  ])('refuses %s=%p on the gateway, naming it', (name, value) => {
    expect(problems(() => loadGatewayConfig({ [name]: value }))).toContain(name);
  });
});
