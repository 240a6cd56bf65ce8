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

  /**
   * A running job that has sent nothing for this long sends an `alive` message, so its gateway can tell a
   * slow backend from a dead worker (keep it well under the gateways' WORKER_SILENCE_MS).
   */
  @EnvInt('REPLY_HEARTBEAT_MS', 10, 60_000)
  replyHeartbeatMs = 1000;

  /**
   * Flow control: a gateway whose reply subscriber has more output than this waiting in Redis gets no more
   * replies from this worker until it caught up (0 = off). Keep it well under Redis's
   * `client-output-buffer-limit pubsub` (soft 8 MB by default), past which Redis drops the subscriber.
   */
  @EnvInt('REPLY_BACKLOG_BYTES', 0)
  replyBacklogPauseBytes = 2 * 1024 * 1024;

  /** The longest a stream waits for its gateway to catch up before it sends anyway. */
  @EnvInt('REPLY_BACKLOG_WAIT_MS', 0, 600_000)
  replyBacklogMaxPauseMs = 10_000;

  /**
   * BullMQ's job lock: a worker killed with a job still holding this lock gives the job back to the queue
   * (to run on another worker) once the lock expires. Shorter re-runs sooner but costs more lock renewals.
   */
  @EnvInt('JOB_LOCK_MS', 1000, 600_000)
  jobLockMs = 10_000;

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

  /**
   * The environment as read at start, for catalog options that name a variable (an upstream's API key):
   * the catalog is loaded after this config, so its backends check the variables they need themselves.
   */
  environment: ReadonlyMap<string, string> = new Map();
}

export function loadWorkerConfig(env: NodeJS.ProcessEnv, kind: 'chat' | 'image' | 'embedding'): WorkerConfig {
  const config = loadConfig(WorkerConfig, env);
  config.environment = new Map(
    Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  if (config.instanceId === '') {
    config.instanceId = `${kind}-${hostname().replace(/[^A-Za-z0-9_.-]/g, '-')}-${process.pid}-${randomBytes(3).toString('hex')}`;
  }
  return config;
}
