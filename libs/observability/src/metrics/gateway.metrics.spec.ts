import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { MetricValue } from 'prom-client';
import { GatewayMetrics } from './gateway.metrics';

type Value = MetricValue<string> & { metricName?: string };

async function values(metrics: GatewayMetrics, name: string) {
  const metric = metrics.registry.getSingleMetric(name);
  if (!metric) throw new Error(`${name} is not registered`);
  return (await metric.get()).values as Value[];
}

async function count(metrics: GatewayMetrics, name: string, labels: Record<string, string>) {
  const found = (await values(metrics, `${name}`)).find(
    (v) => v.metricName === `${name}_count` && Object.entries(labels).every(([k, x]) => v.labels[k] === x),
  );
  return found?.value ?? 0;
}

async function sum(metrics: GatewayMetrics, name: string, labels: Record<string, string>) {
  const found = (await values(metrics, name)).find(
    (v) => v.metricName === `${name}_sum` && Object.entries(labels).every(([k, x]) => v.labels[k] === x),
  );
  return found?.value ?? 0;
}

describe('GatewayMetrics', () => {
  let metrics: GatewayMetrics;

  beforeEach(() => {
    metrics = new GatewayMetrics({ defaultMetrics: false });
  });

  it('counts a finished request by route pattern, method and status, and times it', async () => {
    metrics.requestReceived('r1');
    metrics.requestFinished('r1', '/v1/models/:id', 'GET', 404);
    metrics.requestFinished('r1', '/v1/models/:id', 'GET', 404); // the second close is ignored
    const counted = await values(metrics, 'gateway_http_requests_total');
    expect(counted).toEqual([
      expect.objectContaining({
        value: 1,
        labels: { route: '/v1/models/:id', method: 'GET', status: '404' },
      }),
    ]);
    expect(await count(metrics, 'gateway_http_request_duration_seconds', { route: '/v1/models/:id' })).toBe(
      1,
    );
  });

  it('observes queue wait, time to first token and overhead along a chat request', async () => {
    metrics.requestReceived('r2');
    const timing = metrics.timingFor('r2', 'sim-chat', 'chat');
    timing.enqueued();
    timing.started();
    timing.started(); // a re-run after a worker died counts once
    timing.output();
    timing.output();
    timing.ended(true);
    metrics.requestFinished('r2', '/v1/chat/completions', 'POST', 200);
    const model = { model: 'sim-chat' };
    expect(await count(metrics, 'gateway_queue_wait_seconds', model)).toBe(1);
    expect(await count(metrics, 'gateway_time_to_first_token_seconds', model)).toBe(1);
    expect(await count(metrics, 'gateway_overhead_seconds', model)).toBe(1);
    expect(await sum(metrics, 'gateway_overhead_seconds', model)).toBeGreaterThanOrEqual(0);
  });

  it('has no time to first token for images and no overhead for failed requests', async () => {
    metrics.requestReceived('r3');
    const timing = metrics.timingFor('r3', 'sim-image', 'image');
    timing.enqueued();
    timing.started();
    timing.output();
    timing.ended(false);
    metrics.requestFinished('r3', '/v1/images/generations', 'POST', 502);
    const model = { model: 'sim-image' };
    expect(await count(metrics, 'gateway_queue_wait_seconds', model)).toBe(1);
    expect(await count(metrics, 'gateway_time_to_first_token_seconds', model)).toBe(0);
    expect(await count(metrics, 'gateway_overhead_seconds', model)).toBe(0);
  });

  it('tracks an open stream until its response closes', async () => {
    const response = new EventEmitter() as unknown as ServerResponse;
    metrics.streamOpened(response);
    expect((await values(metrics, 'gateway_active_streams'))[0]!.value).toBe(1);
    response.emit('close');
    expect((await values(metrics, 'gateway_active_streams'))[0]!.value).toBe(0);
  });

  it('exports every rejection reason from the start and counts disconnects by model', async () => {
    metrics.rejected('auth');
    metrics.clientDisconnected('sim-chat');
    const rejected = await values(metrics, 'gateway_rejected_requests_total');
    expect(rejected.map((v) => [v.labels.reason, v.value])).toEqual([
      ['auth', 1],
      ['validation', 0],
      ['unavailable', 0],
      ['overloaded', 0],
      ['too_large', 0],
    ]);
    const disconnects = await values(metrics, 'gateway_client_disconnects_total');
    expect(disconnects).toEqual([expect.objectContaining({ value: 1, labels: { model: 'sim-chat' } })]);
  });

  it('bounds the model label', () => {
    const labels = Array.from({ length: 150 }, (_, i) => metrics.modelLabel(`model-${i}`));
    expect(new Set(labels).size).toBe(101);
    expect(labels[149]).toBe('other');
  });

  it("shows each team's budget share as its last admission saw it, and counts requests past a soft threshold", async () => {
    metrics.budgetSeen('team_a', 'team', 0.5, false);
    metrics.budgetSeen('team_a', 'team', 0.85, true);
    metrics.budgetSeen('team_b', 'team', 0.1, false);
    metrics.budgetSeen('team_b', 'key', 0.95, true); // a key's own budget: counted, never a team's share
    const shares = await values(metrics, 'gateway_budget_used_ratio');
    expect(shares.map((v) => [v.labels.team, v.value])).toEqual([
      ['team_a', 0.85],
      ['team_b', 0.1],
    ]);
    const soft = await values(metrics, 'gateway_budget_soft_threshold_requests_total');
    expect(soft.map((v) => [v.labels.team, v.labels.holder, v.value])).toEqual([
      ['team_a', 'team', 1],
      ['team_b', 'key', 1],
    ]);
  });
});
