import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { Expose } from 'class-transformer';
import { IsString, Matches } from 'class-validator';
import { CatalogAwareConfig } from './shared.config';
import { EnvInt, ToList, Trimmed } from './env.decorators';
import { loadConfig } from './load-config';

/** Settings of a worker process (chat or image). */
export class WorkerConfig extends CatalogAwareConfig {
  /** Catalog ids this process serves; empty means every catalog model of the worker's kind. */
  @Expose({ name: 'WORKER_MODELS' })
  @ToList()
  @IsString({ each: true })
  models: string[] = [];

  /** Jobs run at once per served model. 0 picks the kind's default. */
  @EnvInt('WORKER_CONCURRENCY', 0, 10_000)
  concurrency = 0;

  @Expose({ name: 'WORKER_ID' })
  @Trimmed()
  @Matches(/^[A-Za-z0-9_.:-]{0,128}$/, { message: 'WORKER_ID must be up to 128 letters, digits, . _ : -' })
  instanceId = '';

  @EnvInt('HEARTBEAT_INTERVAL_MS', 50)
  heartbeatIntervalMs = 2000;

  /** How long a finished image stays in Redis for the gateway to collect. */
  @EnvInt('IMAGE_RESULT_TTL_MS', 1000)
  imageResultTtlMs = 120_000;

  /** On SIGTERM, running jobs get this long to finish; the rest end with a 503 their clients can retry. */
  @EnvInt('WORKER_DRAIN_TIMEOUT_MS', 0)
  drainTimeoutMs = 30_000;

  @EnvInt('SIM_CHAT_TTFT_MS', 0)
  simChatTtftMs = 0;

  /** Simulated decoding speed; 0 = as fast as possible. */
  @EnvInt('SIM_CHAT_TOKENS_PER_S', 0)
  simChatTokensPerS = 0;

  @EnvInt('SIM_IMAGE_LATENCY_MS', 0)
  simImageLatencyMs = 0;
}

export function loadWorkerConfig(env: NodeJS.ProcessEnv, kind: 'chat' | 'image'): WorkerConfig {
  const config = loadConfig(WorkerConfig, env);
  if (config.instanceId === '') {
    config.instanceId = `${kind}-${hostname().replace(/[^A-Za-z0-9_.-]/g, '-')}-${process.pid}-${randomBytes(3).toString('hex')}`;
  }
  return config;
}
