import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { ConfigMap, Namespace, PersistentVolumeClaim, Service } from 'kubernetes-models/v1';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { ScaledObject, TriggerAuthentication } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { loadConfig, loadGatewayConfig, loadWorkerConfig, parseCatalog, RegistryConfig } from '@mgw/config';
import { queueNameFor, type ModelKind } from '@mgw/contracts';
import { createMetricsRegistry, METRIC_NAMES, QUEUE_METRICS, QueueMetrics } from '@mgw/observability';
import {
  appOfCommand,
  envNamesOf,
  metricsInPromQL,
  parseYamlDocuments,
  readText,
  ROOT,
  selectorsOf,
} from './deploy-files';
import { GatewayConfig, WorkerConfig } from '@mgw/config';
import { readTracingConfig, TRACING_ENV_NAMES } from '@mgw/tracing';

/** `.ci/run` installs it (Debian's kubernetes-client) when missing; without it the rendering checks fail. */
const KUBECTL = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].find((path) => existsSync(path));

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

interface Container {
  name: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: { httpGet?: { path: string; port: string | number }; exec?: { command: string[] } };
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  volumeMounts?: { name: string; mountPath: string }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
}

/** A model class per kind we ship; validate() checks an object against the Kubernetes/CRD JSON schema. */
const MODELS: Record<string, { validate(data: unknown): void }> = {
  'v1/Namespace': { validate: (d) => new Namespace(d as never).validate() },
  'v1/ConfigMap': { validate: (d) => new ConfigMap(d as never).validate() },
  'v1/Service': { validate: (d) => new Service(d as never).validate() },
  'apps/v1/Deployment': { validate: (d) => new Deployment(d as never).validate() },
  'apps/v1/StatefulSet': { validate: (d) => new StatefulSet(d as never).validate() },
  'policy/v1/PodDisruptionBudget': { validate: (d) => new PodDisruptionBudget(d as never).validate() },
  'keda.sh/v1alpha1/ScaledObject': { validate: (d) => new ScaledObject(d as never).validate() },
  'keda.sh/v1alpha1/TriggerAuthentication': {
    validate: (d) => new TriggerAuthentication(d as never).validate(),
  },
  'networking.k8s.io/v1/NetworkPolicy': { validate: (d) => new NetworkPolicy(d as never).validate() },
  'v1/PersistentVolumeClaim': { validate: (d) => new PersistentVolumeClaim(d as never).validate() },
  'monitoring.coreos.com/v1/ServiceMonitor': { validate: (d) => new ServiceMonitor(d as never).validate() },
};

/** `dir`: a kustomization, relative to the repository (deploy/k8s) or absolute (one a test writes). */
function render(dir = 'deploy/k8s'): K8sObject[] {
  if (!KUBECTL) {
    throw new Error(
      'kubectl not found in /usr/bin or /usr/local/bin: install it (apt-get install kubernetes-client)',
    );
  }
  const result = spawnSync(KUBECTL, ['kustomize', dir], { cwd: ROOT, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`kubectl kustomize ${dir} failed:\n${result.stderr}`);
  return parseYamlDocuments(result.stdout) as K8sObject[];
}

/**
 * The Secrets an operator creates before `kubectl apply -k` (docs/deploy/kubernetes.md), with the keys the
 * commands there give them and values of the kind they generate. Nothing in the render carries a secret.
 */
const OPERATOR_SECRETS: Record<string, Record<string, string>> = {
  'gateway-api-keys': {
    GATEWAY_API_KEYS: 'sk-9c2f4e8a1b7d3f6e0a5c8b2d4f7e1a3c6b9d0e2f',
    GATEWAY_ADMIN_TOKEN: '4d8e2a6c0f3b7e1d5a9c2f6b0e4d8a1c7f3e5b9d',
  },
  'redis-auth': {
    REDIS_PASSWORD: '5e0b8d2f7a1c4e9b3d6f0a8c2e5b7d1f',
    REDIS_URL: 'redis://:5e0b8d2f7a1c4e9b3d6f0a8c2e5b7d1f@redis:6379',
  },
};

interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** Whether a Kubernetes label selector selects a pod with `labels` (an empty selector selects all). */
function selects(selector: LabelSelector, labels: Record<string, string>): boolean {
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpressions = (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
    switch (operator) {
      case 'In':
        return key in labels && values.includes(labels[key]!);
      case 'NotIn':
        return !(key in labels) || !values.includes(labels[key]!);
      case 'Exists':
        return key in labels;
      case 'DoesNotExist':
        return !(key in labels);
      default:
        throw new Error(`unknown selector operator ${operator}`);
    }
  });
  return byLabels && byExpressions;
}

describe('deploy/k8s (kubectl kustomize)', () => {
  let objects: K8sObject[];
  const all = (kind: string) => objects.filter((o) => o.kind === kind);
  const one = (kind: string, name: string) => {
    const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
    if (!found) throw new Error(`no ${kind} ${name}`);
    return found;
  };
  const containerOf = (o: K8sObject): Container => o.spec.template.spec.containers[0] as Container;
  const configMapByPrefix = (prefix: string) =>
    all('ConfigMap').find((c) => c.metadata.name === prefix || c.metadata.name.startsWith(`${prefix}-`))!;
  const workers = () => all('Deployment').filter((d) => d.metadata.name.startsWith('worker-'));

  const secret = (name: string): Record<string, string> => {
    const found = OPERATOR_SECRETS[name];
    if (!found)
      throw new Error(
        `Secret ${name} is neither rendered nor one docs/deploy/kubernetes.md has operators create`,
      );
    return found;
  };
  /** The env a container gets: its ConfigMap/Secret envFrom sources, then its own `env`. */
  const envOf = (container: Container): Record<string, string> => {
    const env: Record<string, string> = {};
    for (const source of container.envFrom ?? []) {
      if (source.configMapRef) Object.assign(env, one('ConfigMap', source.configMapRef.name).data ?? {});
      else Object.assign(env, secret(source.secretRef!.name));
    }
    for (const item of container.env ?? []) {
      const ref = item.valueFrom?.secretKeyRef;
      env[item.name] = ref ? secret(ref.name)[ref.key]! : (item.value ?? '');
    }
    return env;
  };
  /** Every Secret name the render refers to (envFrom, secretKeyRef, KEDA TriggerAuthentication). */
  const secretRefs = (): { name: string; key?: string }[] => {
    const refs: { name: string; key?: string }[] = [];
    for (const workload of [...all('Deployment'), ...all('StatefulSet')]) {
      for (const container of workload.spec.template.spec.containers as Container[]) {
        for (const source of container.envFrom ?? []) {
          if (source.secretRef) refs.push({ name: source.secretRef.name });
        }
        for (const item of container.env ?? []) {
          if (item.valueFrom?.secretKeyRef) refs.push(item.valueFrom.secretKeyRef);
        }
      }
    }
    for (const auth of all('TriggerAuthentication')) {
      for (const target of auth.spec.secretTargetRef as { name: string; key: string }[]) refs.push(target);
    }
    return refs;
  };

  beforeAll(() => {
    objects = render();
  });

  it('renders the objects of the stack', () => {
    const kinds = new Set(objects.map((o) => o.kind));
    for (const kind of [
      'Namespace',
      'ConfigMap',
      'Service',
      'Deployment',
      'StatefulSet',
      'PodDisruptionBudget',
      'ScaledObject',
      'ServiceMonitor',
      'NetworkPolicy',
      'TriggerAuthentication',
    ]) {
      expect(kinds).toContain(kind);
    }
    expect(
      all('Deployment')
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual([
      'gateway',
      'registry',
      'worker-sim-chat',
      'worker-sim-chat-words',
      'worker-sim-embed',
      'worker-sim-image',
    ]);
  });

  it('validates every rendered object against its Kubernetes or CRD schema', () => {
    for (const object of objects) {
      const model = MODELS[`${object.apiVersion}/${object.kind}`];
      expect(`${object.kind} ${object.metadata.name}: ${model ? 'has a schema' : 'has no schema'}`).toBe(
        `${object.kind} ${object.metadata.name}: has a schema`,
      );
      expect(() => model!.validate(object)).not.toThrow();
    }
  });

  it('catches a broken object (checks the checker)', () => {
    const broken = structuredClone(one('Deployment', 'gateway'));
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'http';
    expect(() => MODELS['apps/v1/Deployment']!.validate(broken)).toThrow(/containerPort/);
  });

  it('puts everything in the model-gateway namespace', () => {
    for (const object of objects.filter((o) => o.kind !== 'Namespace')) {
      expect(object.metadata.namespace).toBe('model-gateway');
    }
  });

  it('runs each app with the command of an existing entry point, as non-root, with resources', () => {
    for (const object of [...all('Deployment')]) {
      const container = containerOf(object);
      const app = appOfCommand(container.command);
      expect(app).not.toBeNull();
      expect(object.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
      expect(container.resources?.requests).toEqual(
        expect.objectContaining({ cpu: expect.any(String), memory: expect.any(String) }),
      );
      expect(container.resources?.limits).toEqual(expect.objectContaining({ memory: expect.any(String) }));
    }
    expect(appOfCommand(containerOf(one('Deployment', 'gateway')).command)).toBe('gateway');
    expect(appOfCommand(containerOf(one('Deployment', 'registry')).command)).toBe('registry');
  });

  it('probes the real endpoints: the gateway on its HTTP port, the others on METRICS_PORT 9464', () => {
    for (const object of all('Deployment')) {
      const container = containerOf(object);
      const isGateway = object.metadata.name === 'gateway';
      const portName = isGateway ? 'http' : 'metrics';
      const port = container.ports!.find((p) => p.name === portName)!;
      expect(port.containerPort).toBe(isGateway ? 8080 : 9464);
      expect(container.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: portName });
      expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: portName });
      if (isGateway) expect(envOf(container).PORT).toBe('8080');
      else expect(envOf(container)).not.toHaveProperty('METRICS_PORT');
    }
  });

  it('gives each app only env variables its config reads, and values it accepts', () => {
    for (const object of all('Deployment')) {
      const container = containerOf(object);
      const app = appOfCommand(container.command)!;
      const cls = app === 'gateway' ? GatewayConfig : app === 'registry' ? RegistryConfig : WorkerConfig;
      const env = envOf(container);
      // Every app also reads the OpenTelemetry settings (libs/tracing), before its config.
      const known = new Set([...envNamesOf(cls), ...TRACING_ENV_NAMES]);
      for (const name of Object.keys(env)) {
        expect(`${object.metadata.name}: ${name} ${known.has(name) ? 'is read' : 'is not read'}`).toBe(
          `${object.metadata.name}: ${name} is read`,
        );
      }
      if (app === 'gateway') expect(loadGatewayConfig(env).isProduction).toBe(true);
      else if (app === 'registry') expect(() => loadConfig(RegistryConfig, env)).not.toThrow();
      else expect(() => loadWorkerConfig(env, app === 'chat-worker' ? 'chat' : 'image')).not.toThrow();
    }
  });

  it("keeps the gateway's files on the gateway-files claim (ReadWriteMany), mounted where FILES_DIR points", () => {
    const gateway = one('Deployment', 'gateway');
    expect(one('PersistentVolumeClaim', 'gateway-files').spec.accessModes).toEqual(['ReadWriteMany']);
    const volumes = gateway.spec.template.spec.volumes as {
      name: string;
      persistentVolumeClaim?: { claimName: string };
    }[];
    const volume = volumes.find((v) => v.persistentVolumeClaim?.claimName === 'gateway-files')!;
    const mount = containerOf(gateway).volumeMounts!.find((m) => m.name === volume.name)!;
    const env = envOf(containerOf(gateway));
    expect(env.FILES_DIR).toBe(mount.mountPath);
    expect(loadGatewayConfig(env).filesStore).toBe('directory');
  });

  it('with the files-s3 component: files in a bucket the gateway config accepts, keys from the files-s3 Secret, no claim', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mgw-k8s-'));
    let rendered: K8sObject[];
    try {
      writeFileSync(
        join(dir, 'kustomization.yaml'),
        [
          'apiVersion: kustomize.config.k8s.io/v1beta1',
          'kind: Kustomization',
          'resources:',
          `  - ${relative(dir, join(ROOT, 'deploy/k8s'))}`,
          'components:',
          `  - ${relative(dir, join(ROOT, 'deploy/k8s/components/files-s3'))}`,
          '',
        ].join('\n'),
      );
      rendered = render(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(rendered.filter((o) => o.kind === 'PersistentVolumeClaim')).toEqual([]);
    const gateway = rendered.find((o) => o.kind === 'Deployment' && o.metadata.name === 'gateway')!;
    const container = containerOf(gateway);
    expect(container.envFrom).toContainEqual({ secretRef: { name: 'files-s3' } });
    expect(container.volumeMounts!.map((m) => m.mountPath)).not.toContain('/data/files');
    const own = Object.fromEntries(
      (container.env ?? []).filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]),
    );
    expect(own).not.toHaveProperty('FILES_DIR');
    const config = loadGatewayConfig({
      ...own,
      GATEWAY_API_KEYS: OPERATOR_SECRETS['gateway-api-keys']!.GATEWAY_API_KEYS,
    });
    expect(config).toMatchObject({ filesStore: 's3', filesS3ForcePathStyle: true });
    expect(config.filesS3Bucket.length).toBeGreaterThanOrEqual(3);
  });

  it("shows every app the OpenTelemetry exporter's settings, off until an endpoint is set", () => {
    for (const object of all('Deployment')) {
      const container = containerOf(object);
      const app = appOfCommand(container.command)!;
      const env = envOf(container);
      expect({ name: object.metadata.name, endpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT }).toEqual({
        name: object.metadata.name,
        endpoint: '',
      });
      expect(readTracingConfig(env, app)).toMatchObject({
        enabled: false,
        sampler: 'parentbased_traceidratio',
      });
      const on = { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability:4318' };
      expect(readTracingConfig(on, app)).toMatchObject({
        enabled: true,
        serviceName: `mgw-${app}`,
        samplerRatio: 0.1,
      });
    }
  });

  it('mounts the catalog ConfigMap where CATALOG_PATH points, for the registry and every worker', () => {
    const catalog = configMapByPrefix('catalog');
    for (const object of [one('Deployment', 'registry'), ...workers()]) {
      const volumes = object.spec.template.spec.volumes as { name: string; configMap?: { name: string } }[];
      const volume = volumes.find((v) => v.configMap?.name === catalog.metadata.name);
      expect(volume).toBeDefined();
      const mount = containerOf(object).volumeMounts!.find((m) => m.name === volume!.name)!;
      expect(envOf(containerOf(object)).CATALOG_PATH).toBe(`${mount.mountPath}/catalog.json`);
    }
  });

  it('ships a catalog the loader accepts', () => {
    const text = configMapByPrefix('catalog').data!['catalog.json']!;
    expect(parseCatalog(text, 'catalog ConfigMap').models.length).toBeGreaterThan(0);
  });

  it('has a Redis StatefulSet without eviction or persistence, behind the REDIS_URL service', () => {
    const redis = one('StatefulSet', 'redis');
    const args = containerOf(redis).args!;
    expect(args[args.indexOf('--maxmemory-policy') + 1]).toBe('noeviction');
    expect(args[args.indexOf('--appendonly') + 1]).toBe('no');
    for (const app of all('Deployment')) {
      const url = new URL(envOf(containerOf(app)).REDIS_URL!);
      expect(`${app.metadata.name}: ${url.host}`).toBe(`${app.metadata.name}: redis:6379`);
      expect(one('Service', url.hostname).spec.ports[0].port).toBe(6379);
    }
  });

  it('applies no Secret: the API keys and the Redis password are created by the operator', () => {
    expect(all('Secret')).toEqual([]);
    expect(configMapByPrefix('mgw-env').data).not.toHaveProperty('REDIS_URL');
    const gateway = containerOf(one('Deployment', 'gateway'));
    expect(gateway.envFrom!.find((s) => s.secretRef)!.secretRef!.name).toBe('gateway-api-keys');
    // Every Secret the render refers to is one the docs tell operators to create, with that key.
    const refs = secretRefs();
    expect(new Set(refs.map((r) => r.name))).toEqual(new Set(Object.keys(OPERATOR_SECRETS)));
    for (const ref of refs) if (ref.key) expect(Object.keys(secret(ref.name))).toContain(ref.key);
    const readme = readText('docs/deploy/kubernetes.md');
    expect(readme).toMatch(/create secret generic gateway-api-keys[^`]*--from-literal=GATEWAY_API_KEYS=/);
    expect(readme).toMatch(/--from-literal=GATEWAY_ADMIN_TOKEN=/);
    expect(readme).toMatch(/create secret generic redis-auth[^`]*--from-literal=REDIS_PASSWORD=/);
    expect(readme).toMatch(/--from-literal=REDIS_URL="?redis:\/\/:\$\{?REDIS_PASSWORD\}?@redis:6379/);
    expect(existsSync(`${ROOT}/deploy/k8s/base/api-keys.secret.example.yaml`)).toBe(false);
  });

  it('gives the API keys and admin token production accepts from the documented Secret', () => {
    const config = loadGatewayConfig(envOf(containerOf(one('Deployment', 'gateway'))));
    expect(config.isProduction).toBe(true);
    expect(config.apiKeys).toEqual([OPERATOR_SECRETS['gateway-api-keys']!.GATEWAY_API_KEYS]);
    expect(config.adminToken).toBe(OPERATOR_SECRETS['gateway-api-keys']!.GATEWAY_ADMIN_TOKEN);
  });

  it('runs Redis with the password of the redis-auth Secret, which every app and its probes use', () => {
    const redis = containerOf(one('StatefulSet', 'redis'));
    const args = redis.args!;
    expect(args[args.indexOf('--requirepass') + 1]).toBe('$(REDIS_PASSWORD)');
    const env = envOf(redis);
    const password = OPERATOR_SECRETS['redis-auth']!.REDIS_PASSWORD;
    expect(env.REDIS_PASSWORD).toBe(password);
    // redis-cli reads REDISCLI_AUTH; a NOAUTH answer still exits 0, so only a PONG may pass.
    expect(env.REDISCLI_AUTH).toBe(password);
    const probes = [redis.livenessProbe, redis.readinessProbe] as { exec: { command: string[] } }[];
    for (const probe of probes)
      expect(probe.exec.command.join(' ')).toContain('redis-cli ping | grep -q PONG');
    for (const app of all('Deployment')) {
      const url = new URL(envOf(containerOf(app)).REDIS_URL!);
      expect(`${app.metadata.name}: ${decodeURIComponent(url.password)}`).toBe(
        `${app.metadata.name}: ${password}`,
      );
    }
  });

  describe('the Redis NetworkPolicy', () => {
    const podLabelsOf = (o: K8sObject) => o.spec.template.metadata.labels as Record<string, string>;
    const policy = () => one('NetworkPolicy', 'redis');
    type Peer = { podSelector?: LabelSelector; namespaceSelector?: LabelSelector };
    const peers = () =>
      (policy().spec.ingress as { from: Peer[]; ports: { port: string | number }[] }[]).flatMap(
        (r) => r.from,
      );

    it('selects the Redis pod and no app pod', () => {
      const podSelector = policy().spec.podSelector as LabelSelector;
      expect(selects(podSelector, podLabelsOf(one('StatefulSet', 'redis')))).toBe(true);
      for (const app of all('Deployment')) expect(selects(podSelector, podLabelsOf(app))).toBe(false);
      expect(policy().spec.policyTypes).toEqual(['Ingress']);
    });

    it('lets in exactly the app pods of this namespace, on the Redis port', () => {
      const local = peers().filter((p) => p.namespaceSelector === undefined);
      const admitted = (labels: Record<string, string>) => local.some((p) => selects(p.podSelector!, labels));
      for (const app of all('Deployment')) {
        expect(`${app.metadata.name}: ${admitted(podLabelsOf(app))}`).toBe(`${app.metadata.name}: true`);
      }
      expect(admitted(podLabelsOf(one('StatefulSet', 'redis')))).toBe(false);
      // Any other pod someone starts in the namespace (a debug pod, a job) stays out.
      expect(
        admitted({ 'app.kubernetes.io/name': 'debug', 'app.kubernetes.io/part-of': 'model-gateway' }),
      ).toBe(false);
      expect(admitted({})).toBe(false);
      const ports = (policy().spec.ingress as { ports: { port: string | number }[] }[]).flatMap(
        (r) => r.ports,
      );
      const redisPort = containerOf(one('StatefulSet', 'redis')).ports!.find((p) => p.name === 'redis')!;
      expect(ports.map((p) => p.port)).toEqual([redisPort.name]);
    });

    it("lets in only KEDA's operator from outside, for the workers' redis trigger", () => {
      const outside = peers().filter((p) => p.namespaceSelector !== undefined);
      expect(outside).toEqual([
        {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'keda' } },
          podSelector: { matchLabels: { app: 'keda-operator' } },
        },
      ]);
    });

    it('catches a policy that lets in every pod (checks the checker)', () => {
      expect(selects({}, { any: 'pod' })).toBe(true);
      expect(selects({ matchExpressions: [{ key: 'a', operator: 'In', values: ['x'] }] }, { a: 'y' })).toBe(
        false,
      );
    });
  });

  it('covers every Deployment with a PodDisruptionBudget that selects exactly its pods', () => {
    for (const deployment of all('Deployment')) {
      const podLabels = deployment.spec.template.metadata.labels as Record<string, string>;
      const budgets = all('PodDisruptionBudget').filter((pdb) =>
        Object.entries(pdb.spec.selector.matchLabels as Record<string, string>).every(
          ([k, v]) => podLabels[k] === v,
        ),
      );
      expect(`${deployment.metadata.name}: ${budgets.length}`).toBe(`${deployment.metadata.name}: 1`);
      expect(budgets[0]!.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    }
  });

  it("exposes only the gateway's API port to clients, its operator listener on the gateway-admin Service", () => {
    const container = containerOf(one('Deployment', 'gateway'));
    const portOf = (name: string) => container.ports!.find((p) => p.name === name)!.containerPort;
    expect(envOf(container).ADMIN_PORT).toBe(String(portOf('admin')));
    expect(portOf('admin')).not.toBe(portOf('http'));
    const targets = (name: string) =>
      (one('Service', name).spec.ports as { targetPort: string }[]).map((p) => p.targetPort);
    expect(targets('gateway')).toEqual(['http']);
    expect(one('Service', 'gateway').metadata.labels?.['mgw.dev/scrape']).toBeUndefined();
    expect(targets('gateway-admin')).toEqual(['admin']);
  });

  it('scrapes the gateway, the registry and every worker through the ServiceMonitor', () => {
    const monitor = all('ServiceMonitor')[0]!;
    const selector = monitor.spec.selector.matchLabels as Record<string, string>;
    const endpoint = monitor.spec.endpoints[0] as { port: string; path: string };
    expect(endpoint.path).toBe('/metrics');
    for (const deployment of all('Deployment')) {
      const podLabels = deployment.spec.template.metadata.labels as Record<string, string>;
      const services = all('Service').filter(
        (s) =>
          Object.entries(selector).every(([k, v]) => s.metadata.labels?.[k] === v) &&
          Object.entries(s.spec.selector as Record<string, string>).every(([k, v]) => podLabels[k] === v),
      );
      expect(`${deployment.metadata.name}: ${services.length}`).toBe(`${deployment.metadata.name}: 1`);
      const port = (services[0]!.spec.ports as { name: string; targetPort: string }[]).find(
        (p) => p.name === endpoint.port,
      );
      expect(port).toBeDefined();
      const containerPort = containerOf(deployment).ports!.find((p) => p.name === port!.targetPort);
      // The gateway's operator listener (ADMIN_PORT) and the others' METRICS_PORT.
      expect(containerPort?.containerPort).toBe(9464);
    }
  });

  describe('one worker Deployment and KEDA ScaledObject per model', () => {
    const catalogModels = () =>
      parseCatalog(configMapByPrefix('catalog').data!['catalog.json']!, 'catalog ConfigMap').models;

    it('has one worker Deployment per catalog model, serving exactly that model with the right app', () => {
      const served = workers().map((worker) => {
        const container = containerOf(worker);
        const models = envOf(container).WORKER_MODELS!.split(',');
        expect(models).toHaveLength(1);
        const model = catalogModels().find((m) => m.id === models[0]);
        expect(model).toBeDefined();
        expect(appOfCommand(container.command)).toBe(`${model!.kind}-worker`);
        return model!.id;
      });
      expect(served.sort()).toEqual(
        catalogModels()
          .map((m) => m.id)
          .sort(),
      );
      expect(served).toEqual(
        expect.arrayContaining(['sim-chat', 'sim-chat-words', 'sim-image', 'sim-embed']),
      );
    });

    const scaledObjectOf = (worker: K8sObject) => {
      const scaled = all('ScaledObject').filter((s) => s.spec.scaleTargetRef.name === worker.metadata.name);
      expect(`${worker.metadata.name}: ${scaled.length}`).toBe(`${worker.metadata.name}: 1`);
      return scaled[0]!;
    };
    const triggersOf = (scaled: K8sObject) =>
      scaled.spec.triggers as { type: string; metadata: Record<string, string> }[];

    it('scales each worker Deployment on the waiting jobs of its model, from Prometheus', () => {
      for (const worker of workers()) {
        const model = envOf(containerOf(worker)).WORKER_MODELS!;
        const scaled = scaledObjectOf(worker);
        const triggers = triggersOf(scaled);
        expect(triggers.map((t) => t.type)).toEqual(['prometheus', 'redis']);
        const backlog = triggers[0]!.metadata;
        expect(backlog.serverAddress).toBe('http://prometheus-operated.monitoring.svc.cluster.local:9090');
        // Reads the registry's queue_jobs series of exactly this model (as the registry labels it, the
        // catalog id) in this installation's namespace (a label Prometheus adds from the ServiceMonitor).
        expect(metricsInPromQL(backlog.query!)).toEqual([QUEUE_METRICS.jobs]);
        expect(METRIC_NAMES).toContain(QUEUE_METRICS.jobs);
        expect(selectorsOf(backlog.query!, QUEUE_METRICS.jobs)).toEqual([
          {
            app: appOfCommand(containerOf(one('Deployment', 'registry')).command)!,
            namespace: scaled.metadata.namespace!,
            model,
            state: 'waiting',
          },
        ]);
        // One more replica per 4 waiting jobs; the first waiting job wakes a model from zero.
        expect(backlog.threshold).toBe('4');
        expect(backlog.activationThreshold).toBe('0');
      }
      expect(all('ScaledObject')).toHaveLength(workers().length);
    });

    it('queries labels the registry really exports: one series per model, its waiting count', async () => {
      const models = catalogModels().map((m) => m.id);
      const registry = createMetricsRegistry('registry', { defaultMetrics: false });
      new QueueMetrics(
        registry,
        models,
        {
          queues: () =>
            Promise.resolve(
              models.map((model, i) => ({
                model,
                waiting: 10 + i,
                active: 1,
                delayed: 2,
                oldestWaitingAgeSeconds: 0,
              })),
            ),
          workers: () => [],
        },
        0,
        { warn: () => undefined },
      );
      // What Prometheus scrapes: the exposition text, default labels (`app`) included.
      const series = (await registry.metrics())
        .split('\n')
        .filter((line) => line.startsWith(`${QUEUE_METRICS.jobs}{`))
        .map((line) => ({
          labels: selectorsOf(line, QUEUE_METRICS.jobs)[0]!,
          value: Number(line.slice(line.lastIndexOf(' ') + 1)),
        }));
      expect(series.length).toBe(models.length * 3);
      for (const worker of workers()) {
        const model = envOf(containerOf(worker)).WORKER_MODELS!;
        const [selector] = selectorsOf(
          triggersOf(scaledObjectOf(worker))[0]!.metadata.query!,
          QUEUE_METRICS.jobs,
        );
        // Prometheus adds `namespace` to every scraped series; the registry exports the rest.
        const { namespace, ...exported } = selector!;
        expect(namespace).toBe('model-gateway');
        const matching = series.filter((s) =>
          Object.entries(exported).every(([label, value]) => s.labels[label] === value),
        );
        expect(matching.map((s) => s.value)).toEqual([10 + models.indexOf(model)]);
      }
    });

    it("keeps running jobs in view from the BullMQ active list of its model's queue", () => {
      const prefix = configMapByPrefix('mgw-env').data!.KEY_PREFIX!;
      for (const worker of workers()) {
        const container = containerOf(worker);
        const model = envOf(container).WORKER_MODELS!;
        const kind = appOfCommand(container.command)!.replace('-worker', '') as ModelKind;
        const lists = triggersOf(scaledObjectOf(worker)).filter((t) => t.type === 'redis');
        expect(lists.map((t) => t.metadata.listName)).toEqual([
          `${prefix}:${queueNameFor(kind, model)}:active`,
        ]);
        const active = lists[0]!.metadata;
        // KEDA authenticates with the Redis password through the TriggerAuthentication.
        const auth = (lists[0] as { authenticationRef?: { name: string } }).authenticationRef;
        expect(auth).toBeDefined();
        const target = (
          one('TriggerAuthentication', auth!.name).spec.secretTargetRef as {
            parameter: string;
            name: string;
            key: string;
          }[]
        ).find((t) => t.parameter === 'password');
        expect(target).toEqual({ parameter: 'password', name: 'redis-auth', key: 'REDIS_PASSWORD' });
        expect(active.address).toBe('redis.model-gateway.svc.cluster.local:6379');
        expect(active.activationListLength).toBe('0');
        // A replica is full once it runs WORKER_CONCURRENCY jobs.
        expect(active.listLength).toBe(envOf(container).WORKER_CONCURRENCY);
        expect(Number(active.listLength)).toBeGreaterThan(0);
      }
    });

    it('catches a ScaledObject whose query names another model (checks the checker)', () => {
      const scaled = structuredClone(all('ScaledObject')[0]!);
      const query = triggersOf(scaled)[0]!.metadata.query!;
      const other = query.replace(/model="[^"]*"/, 'model="sim-chat-2"');
      expect(selectorsOf(other, QUEUE_METRICS.jobs)[0]!.model).toBe('sim-chat-2');
      expect(selectorsOf('sum(queue_jobs{model=~"sim.*"})', QUEUE_METRICS.jobs)).toEqual([
        { 'model=~': 'sim.*' },
      ]);
      expect(selectorsOf('queue_jobs{model="a\\"b"}', QUEUE_METRICS.jobs)).toEqual([{ model: 'a"b' }]);
      triggersOf(scaled)[0]!.metadata = { query: 42 } as never;
      expect(() => MODELS['keda.sh/v1alpha1/ScaledObject']!.validate(scaled)).toThrow();
    });

    it('percent-encodes model ids in queue names as the code does', () => {
      expect(queueNameFor('chat', 'acme/llama3:8b')).toBe('chat.acme%2Fllama3%3A8b');
    });

    it('scales to zero only models the catalog declares scaleToZero (the gateway then queues)', () => {
      const zero: string[] = [];
      for (const scaled of all('ScaledObject')) {
        const worker = one('Deployment', scaled.spec.scaleTargetRef.name as string);
        const model = catalogModels().find((m) => m.id === envOf(containerOf(worker)).WORKER_MODELS)!;
        const min = scaled.spec.minReplicaCount as number;
        expect(scaled.spec.maxReplicaCount).toBeGreaterThanOrEqual(Math.max(min, 1));
        expect({ model: model.id, scalesToZero: min === 0 }).toEqual({
          model: model.id,
          scalesToZero: model.scaleToZero !== undefined,
        });
        if (min === 0) zero.push(model.id);
      }
      expect(zero.sort()).toEqual(['sim-chat-words', 'sim-image']);
      expect(catalogModels().find((m) => m.id === 'sim-chat')!.scaleToZero).toBeUndefined();
    });

    it('leaves the replica count of workers to KEDA', () => {
      for (const worker of workers()) expect(worker.spec.replicas).toBeUndefined();
    });
  });
});
