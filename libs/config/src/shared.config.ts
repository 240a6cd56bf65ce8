import { Expose, Transform } from 'class-transformer';
import { IsIn, IsOptional, IsString, Matches } from 'class-validator';
import { EnvBool, EnvInt, Trimmed } from './env.decorators';
import {
  resolveRedisSettings,
  ValidRedisSettings,
  type RedisEnv,
  type RedisSettings,
} from './redis.settings';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** An optional string setting: trimmed, and blank counts as unset. */
function OptionalEnv(name: string): PropertyDecorator {
  const decorators = [
    Expose({ name }),
    Transform(({ value }: { value: unknown }) =>
      typeof value === 'string' ? value.trim() || undefined : value,
    ),
    IsOptional(),
    IsString({ message: `${name} must be a string` }),
  ];
  return (target, key) => decorators.forEach((decorate) => decorate(target, key));
}

/** Settings every process reads: where Redis is and which namespace of it is ours. */
export abstract class SharedConfig {
  /**
   * One of three topologies (README "Redis"): REDIS_URL (one node), REDIS_SENTINELS with
   * REDIS_SENTINEL_MASTER, or REDIS_CLUSTER_NODES. Read through `redis`, which holds the one that is set.
   */
  @OptionalEnv('REDIS_URL')
  redisUrlSetting: string | undefined = undefined;

  @OptionalEnv('REDIS_SENTINELS')
  redisSentinels: string | undefined = undefined;

  @OptionalEnv('REDIS_SENTINEL_MASTER')
  redisSentinelMaster: string | undefined = undefined;

  /** Sensitive: never logged. */
  @OptionalEnv('REDIS_SENTINEL_PASSWORD')
  redisSentinelPassword: string | undefined = undefined;

  @OptionalEnv('REDIS_CLUSTER_NODES')
  redisClusterNodes: string | undefined = undefined;

  @OptionalEnv('REDIS_USERNAME')
  redisUsername: string | undefined = undefined;

  /** Sensitive: never logged. */
  @OptionalEnv('REDIS_PASSWORD')
  redisPassword: string | undefined = undefined;

  /** Also where the Redis variables are checked together: this one is always present. */
  @EnvBool('REDIS_TLS')
  @ValidRedisSettings((config) => (config as SharedConfig).redisEnv)
  redisTls = false;

  private resolvedRedis: RedisSettings | undefined;

  /** Prefix of every Redis key, queue and channel of this deployment. */
  @Expose({ name: 'KEY_PREFIX' })
  @Trimmed()
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'KEY_PREFIX must be 1-64 letters, digits, - or _' })
  namespace = 'mgw';

  @Expose({ name: 'LOG_LEVEL' })
  @Trimmed()
  @IsIn(LOG_LEVELS, { message: `LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}` })
  logLevel: LogLevel = 'log';

  /**
   * `json` (one object per line, for log shippers) or `pretty` (one short human-readable line); unset:
   * pretty in development when stdout is a terminal, JSON otherwise (see the logger factory).
   */
  @Expose({ name: 'LOG_FORMAT' })
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' ? value.trim().toLowerCase() || undefined : value,
  )
  @IsOptional()
  @IsIn(LOG_FORMATS, { message: `LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')}` })
  logFormat: LogFormat | undefined = undefined;

  /** Prompts and generated text stay out of the logs unless this is set (they may hold personal data). */
  @EnvBool('LOG_PROMPTS')
  logPrompts = false;

  @Expose({ name: 'NODE_ENV' })
  @IsString()
  nodeEnv = 'development';

  get isProduction(): boolean {
    return this.nodeEnv === 'production';
  }

  /** The raw Redis variables, for their validation. */
  get redisEnv(): RedisEnv {
    return {
      url: this.redisUrlSetting,
      sentinels: this.redisSentinels,
      sentinelMaster: this.redisSentinelMaster,
      sentinelPassword: this.redisSentinelPassword,
      clusterNodes: this.redisClusterNodes,
      username: this.redisUsername,
      password: this.redisPassword,
      tls: this.redisTls,
    };
  }

  /** The Redis every connection of this process goes to (validated by `loadConfig`). */
  get redis(): RedisSettings {
    if (this.resolvedRedis) return this.resolvedRedis;
    const resolved = resolveRedisSettings(this.redisEnv);
    if (Array.isArray(resolved)) throw new Error(`invalid Redis settings: ${resolved.join('; ')}`);
    this.resolvedRedis = resolved;
    return resolved;
  }

  /** The single node's URL; undefined with a Sentinel set or a Cluster. */
  get redisUrl(): string | undefined {
    const { topology } = this.redis;
    return topology.kind === 'single' ? topology.url : undefined;
  }
}

/** Processes that read the model catalog (registry and workers). */
export abstract class CatalogAwareConfig extends SharedConfig {
  @Expose({ name: 'CATALOG_PATH' })
  @Trimmed()
  @IsString()
  catalogPath = 'deploy/catalog.json';

  /** Port of the small HTTP server with `/metrics`, `/healthz` and `/readyz` (0 = none). */
  @EnvInt('METRICS_PORT', 0, 65535)
  metricsPort = 9464;
}

/** Tools that only need to reach the deployment's Redis namespace (the keys CLI). */
export class RedisOnlyConfig extends SharedConfig {}
