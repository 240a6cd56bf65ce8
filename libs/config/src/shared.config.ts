import { Expose, Transform } from 'class-transformer';
import { IsIn, IsOptional, IsString, Matches } from 'class-validator';
import { EnvBool, EnvInt, Trimmed } from './env.decorators';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Settings every process reads: where Redis is and which namespace of it is ours. */
export abstract class SharedConfig {
  @Expose({ name: 'REDIS_URL' })
  @Trimmed()
  @Matches(/^rediss?:\/\/.+/, { message: 'REDIS_URL must look like redis://host:port' })
  redisUrl = 'redis://127.0.0.1:6379';

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
