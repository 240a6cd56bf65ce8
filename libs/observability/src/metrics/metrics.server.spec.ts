import { Counter, Registry } from 'prom-client';
import { MetricsServer } from './metrics.server';

describe('MetricsServer', () => {
  let ready = false;
  let server: MetricsServer;
  let base: string;

  beforeAll(async () => {
    const registry = new Registry();
    new Counter({ name: 'spec_total', help: 'spec', registers: [registry] }).inc(2);
    server = new MetricsServer(
      { port: 0, host: '127.0.0.1', registry, ready: () => ready },
      { error: () => undefined },
    );
    await server.start();
    base = `http://127.0.0.1:${server.port}`;
  });

  afterAll(async () => {
    await server.stop();
  });

  it('serves the registry as Prometheus text', async () => {
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    expect(await res.text()).toContain('spec_total 2');
  });

  it('answers /healthz always and /readyz by the readiness check', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    ready = false;
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    ready = true;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('refuses to start on a taken port, naming METRICS_PORT', async () => {
    const second = new MetricsServer(
      { port: server.port!, host: '127.0.0.1', registry: new Registry(), ready: () => true },
      { error: () => undefined },
    );
    await expect(second.start()).rejects.toThrow(/METRICS_PORT \d+: cannot listen \(EADDRINUSE\)/);
  });
});
