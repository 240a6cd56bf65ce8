import { randomBytes } from 'node:crypto';
import { Expose } from 'class-transformer';
import { IsBoolean, IsInt, IsString, Matches, Max, Min, MinLength } from 'class-validator';
import { ConfigError, loadConfig } from './load-config';
import { SharedConfig } from './shared.config';
import { ToBool, ToInt, ToList, Trimmed } from './env-transforms';

export class GatewayConfig extends SharedConfig {
  @Expose({ name: 'PORT' })
  @ToInt()
  @Max(65535, { message: 'PORT must be an integer between 0 and 65535' })
  @Min(0, { message: 'PORT must be an integer between 0 and 65535' })
  @IsInt({ message: 'PORT must be an integer between 0 and 65535' })
  port = 8080;

  @Expose({ name: 'HOST' })
  @Trimmed()
  @MinLength(1)
  host = '0.0.0.0';

  /** Comma-separated Bearer keys. Empty in development: one is generated and printed. */
  @Expose({ name: 'GATEWAY_API_KEYS' })
  @ToList()
  @Matches(/^\S{8,512}$/, {
    each: true,
    message: 'GATEWAY_API_KEYS entries must be 8-512 non-space characters',
  })
  apiKeys: string[] = [];

  @Expose({ name: 'DEFAULT_CHAT_MODEL' })
  @Trimmed()
  @MinLength(1)
  @IsString()
  defaultChatModel = 'sim-chat';

  @Expose({ name: 'DEFAULT_IMAGE_MODEL' })
  @Trimmed()
  @MinLength(1)
  @IsString()
  defaultImageModel = 'sim-image';

  @Expose({ name: 'BODY_LIMIT_BYTES' })
  @ToInt()
  @Min(1024, { message: 'BODY_LIMIT_BYTES must be an integer of at least 1024' })
  @IsInt({ message: 'BODY_LIMIT_BYTES must be an integer of at least 1024' })
  bodyLimitBytes = 10 * 1024 * 1024;

  @Expose({ name: 'CHAT_DEADLINE_MS' })
  @ToInt()
  @Min(100, { message: 'CHAT_DEADLINE_MS must be an integer of at least 100' })
  @IsInt({ message: 'CHAT_DEADLINE_MS must be an integer of at least 100' })
  chatDeadlineMs = 10 * 60_000;

  @Expose({ name: 'IMAGE_DEADLINE_MS' })
  @ToInt()
  @Min(100, { message: 'IMAGE_DEADLINE_MS must be an integer of at least 100' })
  @IsInt({ message: 'IMAGE_DEADLINE_MS must be an integer of at least 100' })
  imageDeadlineMs = 5 * 60_000;

  /** `GET /v1/models` requires the Bearer key unless this is false. */
  @Expose({ name: 'MODELS_REQUIRE_AUTH' })
  @ToBool()
  @IsBoolean({ message: 'MODELS_REQUIRE_AUTH must be true or false' })
  modelsRequireAuth = true;

  @Expose({ name: 'REGISTRY_TIMEOUT_MS' })
  @ToInt()
  @Min(10, { message: 'REGISTRY_TIMEOUT_MS must be an integer of at least 10' })
  @IsInt({ message: 'REGISTRY_TIMEOUT_MS must be an integer of at least 10' })
  registryTimeoutMs = 1000;

  /** How long a registry answer is served from memory before it is refreshed. */
  @Expose({ name: 'REGISTRY_CACHE_MS' })
  @ToInt()
  @Min(0, { message: 'REGISTRY_CACHE_MS must be a non-negative integer' })
  @IsInt({ message: 'REGISTRY_CACHE_MS must be a non-negative integer' })
  registryCacheMs = 1000;

  /** While the registry cannot be reached, answers this old are still used. */
  @Expose({ name: 'REGISTRY_STALE_MS' })
  @ToInt()
  @Min(0, { message: 'REGISTRY_STALE_MS must be a non-negative integer' })
  @IsInt({ message: 'REGISTRY_STALE_MS must be a non-negative integer' })
  registryStaleMs = 30_000;

  /** Bytes an SSE client may leave unread before the stream is ended (a stuck reader cannot grow memory). */
  @Expose({ name: 'STREAM_BUFFER_LIMIT_BYTES' })
  @ToInt()
  @Min(1024, { message: 'STREAM_BUFFER_LIMIT_BYTES must be an integer of at least 1024' })
  @IsInt({ message: 'STREAM_BUFFER_LIMIT_BYTES must be an integer of at least 1024' })
  streamBufferLimitBytes = 1024 * 1024;

  @Expose({ name: 'SSE_KEEPALIVE_MS' })
  @ToInt()
  @Min(0, { message: 'SSE_KEEPALIVE_MS must be a non-negative integer (0 disables)' })
  @IsInt({ message: 'SSE_KEEPALIVE_MS must be a non-negative integer (0 disables)' })
  sseKeepAliveMs = 15_000;

  @Expose({ name: 'JOB_RETENTION_FAILED' })
  @ToInt()
  @Min(0)
  @IsInt()
  keepFailedJobs = 1000;

  /** Set when no key was configured and one was generated for this development run. */
  generatedDevKey: string | null = null;
}

export function loadGatewayConfig(env: NodeJS.ProcessEnv): GatewayConfig {
  const config = loadConfig(GatewayConfig, env);
  if (config.apiKeys.length === 0) {
    if (config.isProduction) {
      throw new ConfigError(['GATEWAY_API_KEYS: required when NODE_ENV=production (comma-separated keys)']);
    }
    const key = `sk-gw-dev-${randomBytes(24).toString('base64url')}`;
    config.apiKeys = [key];
    config.generatedDevKey = key;
  }
  return config;
}
