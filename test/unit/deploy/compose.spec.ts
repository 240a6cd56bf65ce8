import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import {
  GatewayConfig,
  loadConfig,
  loadGatewayConfig,
  loadWorkerConfig,
  RegistryConfig,
  WorkerConfig,
} from '@mgw/config';
import {
  appOfCommand,
  dotenvNames,
  envNamesOf,
  interpolate,
  interpolatedNames,
  readText,
  readYaml,
  ROOT,
} from './deploy-files';
import { readTracingConfig } from '@mgw/tracing';

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: unknown;
  environment?: Record<string, string | number | boolean>;
  ports?: string[];
  healthcheck?: { test: unknown };
  deploy?: { replicas?: unknown };
  depends_on?: Record<string, { condition: string }> | string[];
}

interface ComposeFile {
  services: Record<string, ComposeService>;
}

const CONFIG_OF: Record<string, new () => object> = {
  gateway: GatewayConfig,
  registry: RegistryConfig,
  'chat-worker': WorkerConfig,
  'image-worker': WorkerConfig,
  'embedding-worker': WorkerConfig,
};

const APP_SERVICES = Object.keys(CONFIG_OF);

/** The compose file with every `${...}` resolved as compose would, from `env` (e.g. .env.example). */
function composeWith(env: Record<string, string | undefined>): ComposeFile {
  return parse(interpolate(readText('docker-compose.yml'), env), { merge: true }) as ComposeFile;
}

const example = dotenvNames(readText('.env.example'));
/** What an operator puts into .env after `cp .env.example .env`: generated secrets. */
const SECRETS = {
  GATEWAY_API_KEYS: 'sk-9c2f4e8a1b7d3f6e0a5c8b2d4f7e1a3c6b9d0e2f',
  REDIS_PASSWORD: '5e0b8d2f7a1c4e9b3d6f0a8c2e5b7d1f',
};
const configured = { ...example.set, ...SECRETS };

describe('docker-compose.yml', () => {
  const raw = readYaml<ComposeFile>('docker-compose.yml');
  const compose = composeWith(configured);
  const services = compose.services;

  it('runs every part of the stack', () => {
    expect(Object.keys(services).sort()).toEqual(
      [
        'chat-worker',
        'embedding-worker',
        'gateway',
        'grafana',
        'image-worker',
        'prometheus',
        'redis',
        'registry',
      ].sort(),
    );
  });

  it('runs each app from the one image, with the command of an existing entry point', () => {
    for (const name of APP_SERVICES) {
      const service = services[name]!;
      expect(service.image).toBe('model-gateway:local');
      expect(service.build).toBe('.');
      expect(appOfCommand(service.command)).toBe(name);
    }
  });

  it('runs Redis 7 without eviction and without persistence', () => {
    const redis = services.redis!;
    expect(redis.image).toMatch(/^redis:7/);
    const args = redis.command as string[];
    const flag = (name: string) => args[args.indexOf(name) + 1];
    expect(flag('--maxmemory-policy')).toBe('noeviction');
    expect(flag('--save')).toBe('');
    expect(flag('--appendonly')).toBe('no');
  });

  it('publishes the gateway on port 8080, its operator listener on 127.0.0.1 only, and points every app at the compose Redis', () => {
    expect(services.gateway!.ports).toEqual(['8080:8080', '127.0.0.1:9464:9464']);
    expect(
      composeWith({ ...configured, GATEWAY_PORT: '18080', GATEWAY_ADMIN_PORT: '19464' }).services.gateway!
        .ports,
    ).toEqual(['18080:8080', '127.0.0.1:19464:9464']);
    for (const name of APP_SERVICES) {
      expect(new URL(String(services[name]!.environment!.REDIS_URL)).host).toBe('redis:6379');
    }
  });

  it("protects Redis with REDIS_PASSWORD: its --requirepass, its healthcheck and every app's REDIS_URL", () => {
    const args = services.redis!.command as string[];
    expect(args[args.indexOf('--requirepass') + 1]).toBe(SECRETS.REDIS_PASSWORD);
    expect(services.redis!.environment!.REDISCLI_AUTH).toBe(SECRETS.REDIS_PASSWORD);
    // A refused ping (NOAUTH) must not count as healthy.
    expect(JSON.stringify(services.redis!.healthcheck!.test)).toContain('grep -q PONG');
    for (const name of APP_SERVICES) {
      const url = new URL(String(services[name]!.environment!.REDIS_URL));
      expect({ name, password: decodeURIComponent(url.password) }).toEqual({
        name,
        password: SECRETS.REDIS_PASSWORD,
      });
    }
  });

  it.each(['GATEWAY_API_KEYS', 'REDIS_PASSWORD'])('refuses to start without %s', (name) => {
    expect(() => composeWith({ ...configured, [name]: '' })).toThrow(new RegExp(name));
  });

  it('ships .env.example without usable secrets: no Redis password, and an API key production refuses', () => {
    expect(example.set.REDIS_PASSWORD).toBe('');
    expect(() => composeWith(example.set)).toThrow(/REDIS_PASSWORD/);
    const gatewayEnv = composeWith({ ...example.set, REDIS_PASSWORD: SECRETS.REDIS_PASSWORD }).services
      .gateway!.environment!;
    const env = Object.fromEntries(Object.entries(gatewayEnv).map(([k, v]) => [k, String(v)]));
    expect(() => loadGatewayConfig(env)).toThrow(/GATEWAY_API_KEYS entry 1 of 1 is a placeholder/);
  });

  it('makes worker replicas settable, with defaults', () => {
    expect(raw.services['chat-worker']!.deploy!.replicas).toBe('${CHAT_WORKERS:-2}');
    expect(raw.services['image-worker']!.deploy!.replicas).toBe('${IMAGE_WORKERS:-1}');
    const scaled = composeWith({ ...SECRETS, CHAT_WORKERS: '5', IMAGE_WORKERS: '0' });
    expect(Number(scaled.services['chat-worker']!.deploy!.replicas)).toBe(5);
    expect(Number(scaled.services['image-worker']!.deploy!.replicas)).toBe(0);
    const defaults = composeWith(SECRETS);
    expect(Number(defaults.services['chat-worker']!.deploy!.replicas)).toBe(2);
    expect(Number(defaults.services['image-worker']!.deploy!.replicas)).toBe(1);
  });

  it('knows the env names of the config classes', () => {
    expect(envNamesOf(GatewayConfig)).toEqual(expect.any(Set));
    expect([...envNamesOf(GatewayConfig)]).toEqual(
      expect.arrayContaining(['PORT', 'GATEWAY_API_KEYS', 'REDIS_URL', 'KEY_PREFIX', 'NODE_ENV']),
    );
    expect([...envNamesOf(WorkerConfig)]).toEqual(
      expect.arrayContaining(['WORKER_MODELS', 'CATALOG_PATH', 'REDIS_URL']),
    );
    expect(envNamesOf(RegistryConfig).has('WORKER_MODELS')).toBe(false);
  });

  it('gives every app only env variables its config class reads', () => {
    for (const name of APP_SERVICES) {
      const known = envNamesOf(CONFIG_OF[name]!);
      for (const variable of Object.keys(services[name]!.environment ?? {})) {
        expect(`${name}: ${variable} ${known.has(variable) ? 'is read' : 'is not read by its config'}`).toBe(
          `${name}: ${variable} is read`,
        );
      }
    }
  });

  it("gives every app an environment its config accepts (with .env.example's values and with defaults)", () => {
    for (const env of [configured, SECRETS]) {
      const { services: s } = composeWith(env);
      const envOf = (name: string) =>
        Object.fromEntries(Object.entries(s[name]!.environment!).map(([k, v]) => [k, String(v)]));
      expect(() => loadGatewayConfig(envOf('gateway'))).not.toThrow();
      expect(() => loadConfig(RegistryConfig, envOf('registry'))).not.toThrow();
      expect(() => loadWorkerConfig(envOf('chat-worker'), 'chat')).not.toThrow();
      expect(() => loadWorkerConfig(envOf('image-worker'), 'image')).not.toThrow();
      expect(loadGatewayConfig(envOf('gateway')).port).toBe(8080);
      expect(loadGatewayConfig(envOf('gateway')).adminPort).toBe(9464);
      expect(loadGatewayConfig(envOf('gateway')).isProduction).toBe(true);
    }
  });

  it('documents every variable it interpolates in .env.example', () => {
    const used = interpolatedNames(readText('docker-compose.yml'));
    const undocumented = [...used].filter((name) => !example.documented.has(name));
    expect(undocumented).toEqual([]);
  });

  it('health-checks each app on its real endpoint and port', () => {
    const probeOf = (name: string) => JSON.stringify(services[name]!.healthcheck!.test);
    expect(probeOf('gateway')).toContain('http://127.0.0.1:8080/readyz');
    for (const name of ['registry', 'chat-worker', 'image-worker', 'embedding-worker']) {
      expect(probeOf(name)).toContain('http://127.0.0.1:9464/readyz');
    }
    expect(probeOf('redis')).toContain('ping');
  });

  it('starts the apps once Redis is healthy, and the gateway once the registry is', () => {
    for (const name of APP_SERVICES) {
      expect(services[name]!.depends_on).toMatchObject({ redis: { condition: 'service_healthy' } });
    }
    expect(services.gateway!.depends_on).toMatchObject({ registry: { condition: 'service_healthy' } });
  });

  it('mounts the Prometheus and Grafana configuration from deploy/', () => {
    const volumes = (name: string) => (services[name] as { volumes: string[] }).volumes;
    expect(volumes('prometheus')).toContain(
      './deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro',
    );
    expect(volumes('grafana')).toEqual(
      expect.arrayContaining([
        './deploy/grafana/provisioning:/etc/grafana/provisioning:ro',
        './deploy/grafana/dashboards:/var/lib/grafana/dashboards:ro',
      ]),
    );
  });
});

describe('Dockerfile', () => {
  const dockerfile = readText('Dockerfile');
  const stages = dockerfile.split(/^FROM /m).slice(1);

  it('builds in one stage and runs production dependencies only in the last', () => {
    expect(stages).toHaveLength(2);
    expect(stages[0]).toMatch(/RUN npm ci\b/);
    expect(stages[0]).toMatch(/RUN npm run build\b/);
    expect(stages[1]).toMatch(/npm ci --omit=dev\b/);
    expect(stages[1]).toMatch(/COPY --from=build \/app\/dist \.\/dist/);
    expect(stages[1]).toMatch(/COPY deploy\/catalog\.json \.\/deploy\/catalog\.json/);
  });

  it('runs as a non-root user', () => {
    const users = [...stages[1]!.matchAll(/^USER (\S+)/gm)].map((m) => m[1]);
    expect(users.length).toBeGreaterThan(0);
    expect(users.at(-1)).not.toMatch(/^(root|0)$/);
  });

  it('defaults to an existing app entry point', () => {
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile)![1]!;
    expect(appOfCommand(JSON.parse(cmd))).toBe('gateway');
  });

  it('copies only what exists', () => {
    for (const match of dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)) {
      for (const source of match[1]!.split(/\s+/)) {
        expect(`${source}: ${existsSync(join(ROOT, source)) ? 'exists' : 'missing'}`).toBe(
          `${source}: exists`,
        );
      }
    }
  });
});

describe('docker-compose.ha.yml (the `ha` profile: the stack on a Sentinel set)', () => {
  const overlay = parse(interpolate(readText('docker-compose.ha.yml'), SECRETS), {
    merge: true,
  }) as ComposeFile & { services: Record<string, ComposeService & { profiles?: string[] }> };
  const base = composeWith(SECRETS);
  const sentinels = ['sentinel-1', 'sentinel-2', 'sentinel-3'];

  it('adds a replica and three sentinels, in the ha profile only, watching the compose Redis', () => {
    for (const name of ['redis-replica', ...sentinels]) {
      expect({ name, profiles: overlay.services[name]!.profiles }).toEqual({ name, profiles: ['ha'] });
      expect(overlay.services[name]!.image).toMatch(/^redis:7/);
    }
    const replica = overlay.services['redis-replica']!.command as string[];
    expect(replica.slice(replica.indexOf('--replicaof'), replica.indexOf('--replicaof') + 3)).toEqual([
      '--replicaof',
      'redis',
      '6379',
    ]);
    for (const name of sentinels) {
      const script = (overlay.services[name]!.command as string[]).join(' ');
      expect(script).toContain('sentinel monitor mgw redis 6379 2');
      expect(script).toContain('--sentinel');
    }
  });

  it('points every app at the sentinels instead of the URL, and each app accepts that environment', () => {
    for (const name of APP_SERVICES) {
      // Compose merges an override's environment into the base service's, key by key.
      const merged = { ...base.services[name]!.environment, ...overlay.services[name]?.environment };
      const env = Object.fromEntries(Object.entries(merged).map(([k, v]) => [k, String(v)]));
      expect({ name, sentinels: env.REDIS_SENTINELS, url: env.REDIS_URL }).toEqual({
        name,
        sentinels: sentinels.map((host) => `${host}:26379`).join(','),
        url: '',
      });
      const config = loadConfig(CONFIG_OF[name]!, env) as { redis: { topology: unknown } };
      expect(config.redis.topology).toMatchObject({ kind: 'sentinel', masterName: 'mgw' });
    }
  });
});

describe('docker-compose.tracing.yml (the `tracing` profile: OTLP to a collector, Jaeger to look)', () => {
  const text = readText('docker-compose.tracing.yml');
  const overlay = parse(interpolate(text, SECRETS), { merge: true }) as ComposeFile & {
    services: Record<string, ComposeService & { profiles?: string[]; volumes?: string[] }>;
  };
  const base = composeWith(SECRETS);

  it('adds a collector and Jaeger, in the tracing profile only, the collector configured from deploy/', () => {
    for (const name of ['otel-collector', 'jaeger'])
      expect({ name, profiles: overlay.services[name]!.profiles }).toEqual({ name, profiles: ['tracing'] });
    const [config] = overlay.services['otel-collector']!.volumes!;
    const source = config!.split(':')[0]!;
    expect(existsSync(join(ROOT, source))).toBe(true);
    const collector = readYaml<{ receivers: { otlp: { protocols: { http: { endpoint: string } } } } }>(
      source,
    );
    expect(collector.receivers.otlp.protocols.http.endpoint).toBe('0.0.0.0:4318');
  });

  it('points every app at the collector, with settings each app accepts', () => {
    for (const name of APP_SERVICES) {
      const merged = { ...base.services[name]!.environment, ...overlay.services[name]?.environment };
      const env = Object.fromEntries(Object.entries(merged).map(([k, v]) => [k, String(v)]));
      expect(readTracingConfig(env, name)).toMatchObject({ enabled: true, serviceName: `mgw-${name}` });
      expect(env.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://otel-collector:4318');
      expect(() => loadConfig(CONFIG_OF[name]!, env)).not.toThrow();
    }
  });

  it('documents every variable it interpolates in .env.example', () => {
    expect([...interpolatedNames(text)].filter((name) => !example.documented.has(name))).toEqual([]);
  });
});
