import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { GATEWAY_METRICS, METRIC_NAMES, QUEUE_METRICS, WORKER_METRICS } from '@mgw/observability';
import { metricsInPromQL, readText, readYaml, ROOT } from './deploy-files';

interface ScrapeConfig {
  job_name: string;
  metrics_path?: string;
  dns_sd_configs?: { names: string[]; type: string; port: number }[];
  static_configs?: { targets: string[] }[];
}

interface ComposeFile {
  services: Record<string, { command?: string[]; environment?: Record<string, unknown> }>;
}

interface Target {
  refId: string;
  expr: string;
}

interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type: string; uid: string };
  targets?: Target[];
}

interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: { name: string; query: { query: string } | string }[] };
}

/** Where each app serves /metrics: the gateway on its operator listener (ADMIN_PORT), the others on METRICS_PORT. */
const METRICS_PORT_OF: Record<string, number> = {
  gateway: 9464,
  registry: 9464,
  'chat-worker': 9464,
  'image-worker': 9464,
  'embedding-worker': 9464,
};

// Histograms are exported as <name>_bucket/_sum/_count; the only *_seconds gauge is the queue age.
const HISTOGRAMS = new Set(
  METRIC_NAMES.filter((n) => n.endsWith('_seconds') && n !== QUEUE_METRICS.oldestWaitingAge),
);

/** Whether a series name is one we export (ours by METRIC_NAMES, or prom-client's default metrics). */
function isExported(series: string): boolean {
  if (/^(process|nodejs)_[a-z0-9_]+$/.test(series)) return true;
  if (METRIC_NAMES.includes(series)) return true;
  const histogram = /^(.*)_(bucket|sum|count)$/.exec(series);
  return histogram !== null && HISTOGRAMS.has(histogram[1]!);
}

describe('deploy/prometheus/prometheus.yml', () => {
  const config = readYaml<{ scrape_configs: ScrapeConfig[] }>('deploy/prometheus/prometheus.yml');
  const compose = readYaml<ComposeFile>('docker-compose.yml');
  const jobs = new Map(config.scrape_configs.map((job) => [job.job_name, job]));

  it.each(Object.entries(METRICS_PORT_OF))(
    'scrapes every replica of %s by DNS on port %d, at /metrics',
    (service, port) => {
      const job = jobs.get(service);
      expect(job).toBeDefined();
      expect(job!.metrics_path ?? '/metrics').toBe('/metrics');
      expect(job!.dns_sd_configs).toEqual([expect.objectContaining({ names: [service], type: 'A', port })]);
      expect(compose.services[service]).toBeDefined();
    },
  );

  it('scrapes the gateway on the port compose gives its operator listener, not on its API port', () => {
    const env = compose.services.gateway!.environment as Record<string, unknown>;
    expect(String(env.ADMIN_PORT)).toBe(String(METRICS_PORT_OF.gateway));
    expect(String(env.PORT)).not.toBe(String(METRICS_PORT_OF.gateway));
  });

  it('scrapes only services compose runs', () => {
    for (const job of config.scrape_configs) {
      for (const sd of job.dns_sd_configs ?? []) {
        for (const name of sd.names) expect(Object.keys(compose.services)).toContain(name);
      }
    }
  });

  it('leaves the gateway on its PORT and the others on the default METRICS_PORT', () => {
    expect(compose.services.gateway!.environment!.PORT).toBe(8080);
    for (const service of ['registry', 'chat-worker', 'image-worker']) {
      // Unset means the default 9464; a compose override would have to move the scrape port too.
      expect(compose.services[service]!.environment).not.toHaveProperty('METRICS_PORT');
    }
  });
});

describe('Grafana provisioning', () => {
  const datasources = readYaml<{ datasources: { uid: string; type: string; url: string }[] }>(
    'deploy/grafana/provisioning/datasources/prometheus.yml',
  );
  const providers = readYaml<{ providers: { options: { path: string } }[] }>(
    'deploy/grafana/provisioning/dashboards/model-gateway.yml',
  );

  it('provisions the compose Prometheus as a datasource', () => {
    expect(datasources.datasources).toEqual([
      expect.objectContaining({ uid: 'prometheus', type: 'prometheus', url: 'http://prometheus:9090' }),
    ]);
  });

  it('loads dashboards from where compose mounts deploy/grafana/dashboards', () => {
    expect(providers.providers[0]!.options.path).toBe('/var/lib/grafana/dashboards');
    expect(readdirSync(join(ROOT, 'deploy/grafana/dashboards'))).toContain('model-gateway.json');
  });
});

describe('deploy/grafana/dashboards/model-gateway.json', () => {
  const dashboard = JSON.parse(readText('deploy/grafana/dashboards/model-gateway.json')) as Dashboard;
  const panels = dashboard.panels.filter((panel) => panel.type !== 'row');
  const queries = panels.flatMap((panel) => (panel.targets ?? []).map((t) => ({ panel, expr: t.expr })));
  const byTitle = (pattern: RegExp) => panels.filter((panel) => pattern.test(panel.title));
  const exprsOf = (pattern: RegExp) => byTitle(pattern).flatMap((p) => p.targets!.map((t) => t.expr));

  it('is a dashboard with a stable uid and unique panel ids', () => {
    expect(dashboard.uid).toBe('model-gateway');
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(queries.length).toBeGreaterThan(10);
  });

  it('queries the provisioned datasource', () => {
    for (const panel of panels) expect(panel.datasource).toEqual({ type: 'prometheus', uid: 'prometheus' });
  });

  it('finds the metric names in PromQL (checks the checker)', () => {
    expect(
      metricsInPromQL(
        'histogram_quantile(0.95, sum by (le, model) (rate(gateway_queue_wait_seconds_bucket{model=~"$model"}[$__rate_interval]))) / clamp_min(up, 1e-9)',
      ),
    ).toEqual(['gateway_queue_wait_seconds_bucket', 'up']);
    expect(isExported('gateway_queue_wait_seconds_bucket')).toBe(true);
    expect(isExported('gateway_active_streams_bucket')).toBe(false);
    expect(isExported('gateway_requests_total')).toBe(false);
  });

  it('queries only metrics the apps export', () => {
    for (const { panel, expr } of queries) {
      const names = metricsInPromQL(expr);
      expect(names.length).toBeGreaterThan(0);
      for (const name of names) {
        expect(`${panel.title}: ${name} ${isExported(name) ? 'exported' : 'is not exported'}`).toBe(
          `${panel.title}: ${name} exported`,
        );
      }
    }
    for (const variable of dashboard.templating.list) {
      const query = typeof variable.query === 'string' ? variable.query : variable.query.query;
      const metric = /^label_values\(([a-z_:][a-z0-9_:]*),/.exec(query)?.[1];
      expect(metric && isExported(metric)).toBe(true);
    }
  });

  it('takes quantiles only of histogram buckets, by le', () => {
    for (const { expr } of queries.filter((q) => q.expr.includes('histogram_quantile'))) {
      expect(expr).toMatch(/by \(le[,)]/);
      for (const name of metricsInPromQL(expr)) expect(name).toMatch(/_bucket$/);
    }
  });

  it('shows what an operator watches: RPS, errors, TTFT, queues, tokens/s, streams, workers', () => {
    expect(exprsOf(/requests per second/i).join()).toContain(GATEWAY_METRICS.httpRequests);
    expect(exprsOf(/error rate/i).join()).toMatch(/status=~"5\.\."/);
    const ttft = exprsOf(/time to first token/i).join('\n');
    expect(ttft).toContain(`${GATEWAY_METRICS.timeToFirstToken}_bucket`);
    expect(ttft).toContain('histogram_quantile(0.5,');
    expect(ttft).toContain('histogram_quantile(0.95,');
    expect(exprsOf(/queue depth/i).join()).toContain(`${QUEUE_METRICS.jobs}{state="waiting"`);
    expect(exprsOf(/queue wait/i).join()).toContain(`${GATEWAY_METRICS.queueWait}_bucket`);
    expect(exprsOf(/tokens per second/i).join()).toContain(WORKER_METRICS.tokens);
    expect(exprsOf(/active streams/i).join()).toContain(GATEWAY_METRICS.activeStreams);
    expect(exprsOf(/workers per model/i).join()).toContain(QUEUE_METRICS.registryWorkers);
  });

  it('lays panels out inside the 24-column grid', () => {
    for (const panel of dashboard.panels) {
      expect(panel.gridPos.x + panel.gridPos.w).toBeLessThanOrEqual(24);
    }
  });
});
