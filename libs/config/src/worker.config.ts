import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { Expose } from 'class-transformer';
import { IsInt, IsString, Matches, Max, Min } from 'class-validator';
import { CatalogAwareConfig } from './shared.config';
import { ToInt, ToList, Trimmed } from './env-transforms';
import { loadConfig } from './load-config';

/** Settings of a worker process (chat or image). */
export class WorkerConfig extends CatalogAwareConfig {
  /** Catalog ids this process serves; empty means every catalog model of the worker's kind. */
  @Expose({ name: 'WORKER_MODELS' })
  @ToList()
  @IsString({ each: true })
  models: string[] = [];

  /** Jobs run at once per served model. 0 picks the kind's default. */
  @Expose({ name: 'WORKER_CONCURRENCY' })
  @ToInt()
  @Max(10_000, { message: 'WORKER_CONCURRENCY must be an integer between 0 and 10000' })
  @Min(0, { message: 'WORKER_CONCURRENCY must be an integer between 0 and 10000' })
  @IsInt({ message: 'WORKER_CONCURRENCY must be an integer between 0 and 10000' })
  concurrency = 0;

  @Expose({ name: 'WORKER_ID' })
  @Trimmed()
  @Matches(/^[A-Za-z0-9_.:-]{0,128}$/, { message: 'WORKER_ID must be up to 128 letters, digits, . _ : -' })
  instanceId = '';

  @Expose({ name: 'HEARTBEAT_INTERVAL_MS' })
  @ToInt()
  @Min(50, { message: 'HEARTBEAT_INTERVAL_MS must be an integer of at least 50' })
  @IsInt({ message: 'HEARTBEAT_INTERVAL_MS must be an integer of at least 50' })
  heartbeatIntervalMs = 2000;

  /** How long a finished image stays in Redis for the gateway to collect. */
  @Expose({ name: 'IMAGE_RESULT_TTL_MS' })
  @ToInt()
  @Min(1000)
  @IsInt()
  imageResultTtlMs = 120_000;

  @Expose({ name: 'SIM_CHAT_TTFT_MS' })
  @ToInt()
  @Min(0, { message: 'SIM_CHAT_TTFT_MS must be a non-negative integer' })
  @IsInt({ message: 'SIM_CHAT_TTFT_MS must be a non-negative integer' })
  simChatTtftMs = 0;

  /** Simulated decoding speed; 0 = as fast as possible. */
  @Expose({ name: 'SIM_CHAT_TOKENS_PER_S' })
  @ToInt()
  @Min(0, { message: 'SIM_CHAT_TOKENS_PER_S must be a non-negative integer (0 = unlimited)' })
  @IsInt({ message: 'SIM_CHAT_TOKENS_PER_S must be a non-negative integer (0 = unlimited)' })
  simChatTokensPerS = 0;

  @Expose({ name: 'SIM_IMAGE_LATENCY_MS' })
  @ToInt()
  @Min(0, { message: 'SIM_IMAGE_LATENCY_MS must be a non-negative integer' })
  @IsInt({ message: 'SIM_IMAGE_LATENCY_MS must be a non-negative integer' })
  simImageLatencyMs = 0;
}

export function loadWorkerConfig(env: NodeJS.ProcessEnv, kind: 'chat' | 'image'): WorkerConfig {
  const config = loadConfig(WorkerConfig, env);
  if (config.instanceId === '') {
    config.instanceId = `${kind}-${hostname().replace(/[^A-Za-z0-9_.-]/g, '-')}-${process.pid}-${randomBytes(3).toString('hex')}`;
  }
  return config;
}
