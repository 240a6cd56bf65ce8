import { registerDecorator, type ValidationArguments } from 'class-validator';

/** Where every process finds Redis when none of the three topology settings is given: a local node. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export interface RedisNode {
  host: string;
  port: number;
}

/** The one Redis a deployment uses, as one of its three shapes (README "Redis"). */
export type RedisTopology =
  | { kind: 'single'; url: string }
  | { kind: 'sentinel'; sentinels: RedisNode[]; masterName: string; sentinelPassword?: string }
  | { kind: 'cluster'; nodes: RedisNode[] };

/** The topology with the credentials and TLS every connection to it uses (data nodes, not sentinels). */
export interface RedisSettings {
  topology: RedisTopology;
  username?: string;
  password?: string;
  tls: boolean;
  /** What a log line or an error may say about it: the shape and the addresses, never a password. */
  description: string;
}

/** The raw settings as read from the environment (strings, or undefined when unset or blank). */
export interface RedisEnv {
  url?: string;
  sentinels?: string;
  sentinelMaster?: string;
  sentinelPassword?: string;
  clusterNodes?: string;
  username?: string;
  password?: string;
  tls: boolean;
}

const TOPOLOGY_VARIABLES = ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'] as const;

/** `host:port` or `[v6]:port`. */
const NODE_PATTERN = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+)):(\d{1,5})$/;

function parseNodes(list: string): RedisNode[] | string {
  const entries = list
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
  if (entries.length === 0) return 'is empty';
  const nodes: RedisNode[] = [];
  for (const entry of entries) {
    const match = NODE_PATTERN.exec(entry);
    const port = match ? Number(match[3]) : 0;
    if (!match || port < 1 || port > 65535) {
      return `entry ${JSON.stringify(entry)} is not host:port`;
    }
    nodes.push({ host: match[1] ?? match[2] ?? '', port });
  }
  return nodes;
}

function describeNodes(nodes: readonly RedisNode[]): string {
  return nodes
    .map(({ host, port }) => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`))
    .join(',');
}

/** A Redis URL as it may appear in a log or an error: its password replaced, everything else kept. */
export function redactRedisUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//***@');
  }
  if (parsed.password === '') return url;
  parsed.password = '***';
  return parsed.href;
}

/**
 * The settings, or every reason they cannot be used. Exactly one topology: two would leave it to chance
 * which Redis a process talks to, so start-up refuses them. None means the local default node.
 */
export function resolveRedisSettings(env: RedisEnv): RedisSettings | string[] {
  const given = TOPOLOGY_VARIABLES.filter((name) => {
    const value = {
      REDIS_URL: env.url,
      REDIS_SENTINELS: env.sentinels,
      REDIS_CLUSTER_NODES: env.clusterNodes,
    }[name];
    return value !== undefined;
  });
  if (given.length > 1) {
    return [
      `REDIS: ${given.join(' and ')} are both set; set exactly one of ${TOPOLOGY_VARIABLES.join(', ')} ` +
        '(one node, a Sentinel set, or a Redis Cluster)',
    ];
  }
  const problems: string[] = [];
  const credentials = { username: env.username, password: env.password, tls: env.tls };
  if (env.sentinels !== undefined) {
    const sentinels = parseNodes(env.sentinels);
    if (typeof sentinels === 'string') problems.push(`REDIS_SENTINELS ${sentinels} (host:port,host:port,…)`);
    if (env.sentinelMaster === undefined) {
      problems.push(
        'REDIS_SENTINEL_MASTER: required with REDIS_SENTINELS (the master name the sentinels monitor)',
      );
    }
    if (problems.length > 0 || typeof sentinels === 'string' || env.sentinelMaster === undefined)
      return problems;
    return {
      ...credentials,
      topology: {
        kind: 'sentinel',
        sentinels,
        masterName: env.sentinelMaster,
        sentinelPassword: env.sentinelPassword,
      },
      description: `Sentinel master ${env.sentinelMaster} via ${describeNodes(sentinels)}${env.tls ? ' (TLS)' : ''}`,
    };
  }
  if (env.sentinelMaster !== undefined || env.sentinelPassword !== undefined) {
    problems.push('REDIS_SENTINEL_MASTER and REDIS_SENTINEL_PASSWORD only apply with REDIS_SENTINELS');
  }
  if (env.clusterNodes !== undefined) {
    const nodes = parseNodes(env.clusterNodes);
    if (typeof nodes === 'string') problems.push(`REDIS_CLUSTER_NODES ${nodes} (host:port,host:port,…)`);
    if (problems.length > 0 || typeof nodes === 'string') return problems;
    return {
      ...credentials,
      topology: { kind: 'cluster', nodes },
      description: `Redis Cluster via ${describeNodes(nodes)}${env.tls ? ' (TLS)' : ''}`,
    };
  }
  const url = env.url ?? DEFAULT_REDIS_URL;
  if (!/^rediss?:\/\/.+/.test(url)) problems.push('REDIS_URL must look like redis://host:port');
  if (problems.length > 0) return problems;
  return {
    ...credentials,
    // The URL's own credentials and scheme count unless the separate settings say otherwise.
    tls: env.tls || url.startsWith('rediss:'),
    topology: { kind: 'single', url },
    description: `${redactRedisUrl(url)}${env.url === undefined ? ' (REDIS_URL unset: the local default)' : ''}`,
  };
}

/**
 * Validates the Redis settings of the object as a whole (every topology variable and credential at once),
 * reporting each problem under the variable it names.
 */
export function ValidRedisSettings(read: (config: object) => RedisEnv): PropertyDecorator {
  const problemsOf = (args: ValidationArguments): string[] => {
    const resolved = resolveRedisSettings(read(args.object));
    return Array.isArray(resolved) ? resolved : [];
  };
  return (target, propertyName) =>
    registerDecorator({
      name: 'validRedisSettings',
      target: target.constructor,
      propertyName: propertyName as string,
      validator: {
        validate: (_value: unknown, args: ValidationArguments) => problemsOf(args).length === 0,
        defaultMessage: (args: ValidationArguments) => problemsOf(args).join('; '),
      },
    });
}
