import { randomBytes } from 'node:crypto';
import { Expose, Transform } from 'class-transformer';
import {
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  Min,
  MinLength,
  ValidateIf,
} from 'class-validator';
import { REQUEST_SIZE_CEILINGS, REQUEST_SIZE_DEFAULTS, type RequestSizeLimits } from '@mgw/contracts';
import { ConfigError, loadConfig } from './load-config';
import { SharedConfig } from './shared.config';
import { EnvBool, EnvInt, ToInt, ToList, Trimmed } from './env.decorators';
import { StrongInProduction } from './production-secret.validator';
import { FILE_STORE_KINDS, OPENAI_FILE_LIMITS, type FileStoreKind } from './files.settings';

const API_KEY_FORMAT = /^\S{8,512}$/;
const ADMIN_TOKEN_FORMAT = /^\S{24,512}$/;

export class GatewayConfig extends SharedConfig {
  @EnvInt('PORT', 0, 65535)
  port = 8080;

  @Expose({ name: 'HOST' })
  @Trimmed()
  @MinLength(1)
  host = '0.0.0.0';

  /**
   * A second listener for the operator's routes (`/admin/*`, `/metrics`; the probes and the console are on
   * both): set, they are served only here and answer 404 on PORT, so an ingress can expose only the API.
   * Unset: one listener serves everything.
   */
  @Expose({ name: 'ADMIN_PORT' })
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && value.trim() === '' ? undefined : value,
  )
  @ToInt()
  @IsOptional()
  @IsInt({ message: 'ADMIN_PORT must be an integer between 1 and 65535' })
  @Min(1, { message: 'ADMIN_PORT must be an integer between 1 and 65535' })
  @Max(65535, { message: 'ADMIN_PORT must be an integer between 1 and 65535' })
  adminPort: number | undefined = undefined;

  /** The operator listener's address; HOST when unset (e.g. `127.0.0.1` keeps it off the network). */
  @Expose({ name: 'ADMIN_HOST' })
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' ? value.trim() || undefined : value,
  )
  @IsOptional()
  @IsString({ message: 'ADMIN_HOST must be a string' })
  adminHost: string | undefined = undefined;

  /**
   * Where the guides are read (the repository's docs/ tree as its host renders it, e.g. its docs/README.md on
   * the code host): `/openapi.json` names it as `externalDocs` and `/docs` links it. Unset: no link, since a
   * gateway cannot know where its sources are published.
   */
  @Expose({ name: 'DOCS_URL' })
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' ? value.trim() || undefined : value,
  )
  @IsOptional()
  @IsUrl(
    { protocols: ['http', 'https'], require_protocol: true, require_tld: false },
    { message: 'DOCS_URL must be an http(s) URL' },
  )
  docsUrl: string | undefined = undefined;

  /**
   * Comma-separated Bearer keys. Empty in development: one is generated and printed. In production each
   * must be long and random (no example values), since these keys open every model without limits.
   */
  @Expose({ name: 'GATEWAY_API_KEYS' })
  @ToList()
  @StrongInProduction('GATEWAY_API_KEYS', API_KEY_FORMAT)
  @Matches(API_KEY_FORMAT, {
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

  @EnvInt('BODY_LIMIT_BYTES', 1024)
  bodyLimitBytes = 10 * 1024 * 1024;

  /**
   * A request body not received completely this long after the headers is answered `408` and its
   * connection closed: a body that trickles cannot hold a connection and its buffer open. Only the reading
   * phase is bounded; a streamed answer may take as long as its generation.
   */
  @EnvInt('BODY_TIMEOUT_MS', 100, 3_600_000)
  bodyTimeoutMs = 60_000;

  /** Request headers not received completely this long after the connection asked for a request get `408`. */
  @EnvInt('HEADERS_TIMEOUT_MS', 100, 600_000)
  headersTimeoutMs = 20_000;

  /** Content parts one chat message may carry; more are refused before the body is validated. */
  @EnvInt('CHAT_MAX_CONTENT_PARTS', 1, REQUEST_SIZE_CEILINGS.contentParts)
  chatMaxContentParts = REQUEST_SIZE_DEFAULTS.contentParts;

  /** Characters of text across a chat request's messages; more are refused before the body is validated. */
  @EnvInt('CHAT_MAX_TEXT_CHARS', 1, REQUEST_SIZE_CEILINGS.textChars)
  chatMaxTextChars = REQUEST_SIZE_DEFAULTS.textChars;

  /** Image parts across a chat request's messages (sent whole or expanded from stored items). */
  @EnvInt('CHAT_MAX_IMAGE_PARTS', 1, REQUEST_SIZE_CEILINGS.imageParts)
  chatMaxImageParts = REQUEST_SIZE_DEFAULTS.imageParts;

  /** Bytes of image URLs across a chat request's messages (a `data:` URL counts its whole text). */
  @EnvInt('CHAT_MAX_IMAGE_BYTES', 1, REQUEST_SIZE_CEILINGS.imageBytes)
  chatMaxImageBytes = REQUEST_SIZE_DEFAULTS.imageBytes;

  /** The size bounds every chat-shaped route holds a request to, sent whole or expanded. */
  requestSizeLimits(): RequestSizeLimits {
    return {
      contentParts: this.chatMaxContentParts,
      textChars: this.chatMaxTextChars,
      imageParts: this.chatMaxImageParts,
      imageBytes: this.chatMaxImageBytes,
    };
  }

  @EnvInt('CHAT_DEADLINE_MS', 100)
  chatDeadlineMs = 10 * 60_000;

  @EnvInt('IMAGE_DEADLINE_MS', 100)
  imageDeadlineMs = 5 * 60_000;

  @EnvInt('EMBEDDING_DEADLINE_MS', 100)
  embeddingDeadlineMs = 60_000;

  /** `GET /v1/models` requires the Bearer key unless this is false. */
  @EnvBool('MODELS_REQUIRE_AUTH')
  modelsRequireAuth = true;

  @EnvInt('REGISTRY_TIMEOUT_MS', 10)
  registryTimeoutMs = 1000;

  /** How long a registry answer is served from memory before it is refreshed. */
  @EnvInt('REGISTRY_CACHE_MS', 0)
  registryCacheMs = 1000;

  /** While the registry cannot be reached, answers this old are still used. */
  @EnvInt('REGISTRY_STALE_MS', 0)
  registryStaleMs = 30_000;

  /** Bytes an SSE client may leave unread before the stream is ended (a stuck reader cannot grow memory). */
  @EnvInt('STREAM_BUFFER_LIMIT_BYTES', 1024)
  streamBufferLimitBytes = 1024 * 1024;

  /**
   * The worker silence limit: a running request whose worker has been silent this long (no reply, no `alive`
   * heartbeat) is considered orphaned (the worker died): with output already sent it ends with an error;
   * before any output it waits for the job to run again elsewhere. Formerly WORKER_LEASE_MS.
   */
  @EnvInt('WORKER_SILENCE_MS', 100, 600_000)
  workerSilenceMs = 3000;

  /** An ended stream a client has not read within this long has its connection dropped (0 = never). */
  @EnvInt('STREAM_FLUSH_TIMEOUT_MS', 0)
  streamFlushTimeoutMs = 30_000;

  /**
   * How long a chat stream's events are kept in Redis (its replay log) after its last one, for a resume on
   * any replica (`GET /v1/chat/completions/{id}?stream=true`). 0 = streams are not resumable.
   */
  @EnvInt('STREAM_RETENTION_MS', 0, 24 * 3_600_000)
  streamRetentionMs = 10 * 60_000;

  /** Frames one stream's replay log keeps at most; a longer stream cannot be resumed from its start. */
  @EnvInt('STREAM_LOG_MAX_ENTRIES', 16, 1_000_000)
  streamLogMaxEntries = 100_000;

  /**
   * A resumable stream whose client left goes on generating this long, waiting for a resume, before its job
   * is cancelled (0 = cancelled at once). Also how long a job whose gateway died waits to be taken over.
   */
  @EnvInt('RESUME_GRACE_MS', 0, 600_000)
  resumeGraceMs = 30_000;

  @EnvInt('SSE_KEEPALIVE_MS', 0)
  sseKeepAliveMs = 15_000;

  @EnvInt('JOB_RETENTION_FAILED', 0)
  keepFailedJobs = 1000;

  /** Bytes of failed jobs kept per model: with each kept job bounded in size, this caps their number too. */
  @EnvInt('JOB_RETENTION_BYTES', 0)
  keepFailedJobBytes = 4 * 1024 * 1024;

  /**
   * Bearer token of the admin API (`/admin/*`), a secret separate from every API key. Unset: the admin
   * routes do not exist (404).
   */
  @Expose({ name: 'GATEWAY_ADMIN_TOKEN' })
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && value.trim() === '' ? undefined : value,
  )
  @IsOptional()
  @StrongInProduction('GATEWAY_ADMIN_TOKEN', ADMIN_TOKEN_FORMAT)
  @Matches(ADMIN_TOKEN_FORMAT, { message: 'GATEWAY_ADMIN_TOKEN must be 24-512 non-space characters' })
  adminToken: string | undefined = undefined;

  /**
   * How long a looked-up API key is served from memory. Changes reach every replica at once by pub/sub;
   * this only bounds staleness when an invalidation is lost (Redis reconnect).
   */
  @EnvInt('KEY_CACHE_MS', 0, 60_000)
  keyCacheMs = 5000;

  @EnvInt('KEY_CACHE_MAX', 1)
  keyCacheMax = 10_000;

  /**
   * How long a concurrency slot (a key's `max_concurrent`, held from admission to the request's end) outlives
   * its last refresh: refreshed while its request lives, so a crashed gateway's slots come back. Formerly
   * CONCURRENCY_LEASE_MS.
   */
  @EnvInt('CONCURRENCY_SLOT_TTL_MS', 1000, 600_000)
  concurrencySlotTtlMs = 30_000;

  /** Completion tokens reserved against a key's TPM limit when a request sets no max_tokens. */
  @EnvInt('TPM_DEFAULT_MAX_TOKENS', 1)
  tpmDefaultMaxTokens = 1024;

  /** Waiting jobs allowed per model when the catalog sets no `maxQueueDepth`. */
  @EnvInt('DEFAULT_MAX_QUEUE_DEPTH', 1)
  defaultMaxQueueDepth = 1000;

  /** On SIGTERM, open requests get this long to finish before they end with a 503 / a stream error. */
  @EnvInt('GATEWAY_DRAIN_TIMEOUT_MS', 0)
  drainTimeoutMs = 30_000;

  /** On SIGTERM, `/readyz` answers 503 this long before the listener closes (load balancers catch up). */
  @EnvInt('GATEWAY_SHUTDOWN_DELAY_MS', 0)
  shutdownDelayMs = 0;

  /**
   * How long a stored completion (`store: true`) is kept after its creation; Redis expires it then. 30 days
   * by default, as OpenAI keeps them.
   */
  @EnvInt('STORE_RETENTION_MS', 1000, 366 * 24 * 3_600_000)
  storeRetentionMs = 30 * 24 * 3_600_000;

  /** Stored completions kept per API key: storing one more evicts the key's oldest. */
  @EnvInt('STORE_MAX_PER_KEY', 1, 1_000_000)
  storeMaxPerKey = 10_000;

  /**
   * Where file contents (the Files API) are kept: `directory` (FILES_DIR, on a volume) or `s3` (an
   * S3-compatible bucket, FILES_S3_*; its credentials come from the standard AWS environment).
   */
  @Expose({ name: 'FILES_STORE' })
  @Trimmed()
  @IsIn(FILE_STORE_KINDS, { message: `FILES_STORE must be one of ${FILE_STORE_KINDS.join(', ')}` })
  filesStore: FileStoreKind = 'directory';

  @Expose({ name: 'FILES_DIR' })
  @Trimmed()
  @MinLength(1, { message: 'FILES_DIR must be a path' })
  filesDir = 'data/files';

  @Expose({ name: 'FILES_S3_BUCKET' })
  @Trimmed()
  @ValidateIf((config: GatewayConfig) => config.filesStore === 's3')
  @Matches(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, {
    message:
      'FILES_S3_BUCKET must name a bucket (3-63 lowercase letters, digits, . or -) when FILES_STORE=s3',
  })
  filesS3Bucket = '';

  /** An S3-compatible endpoint (MinIO, Ceph, GCS); unset: AWS S3 of the region. */
  @Expose({ name: 'FILES_S3_ENDPOINT' })
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' ? value.trim() || undefined : value,
  )
  @IsOptional()
  @IsUrl(
    { require_tld: false, require_protocol: true, protocols: ['http', 'https'] },
    { message: 'FILES_S3_ENDPOINT must be an http(s) URL' },
  )
  filesS3Endpoint: string | undefined = undefined;

  @Expose({ name: 'FILES_S3_REGION' })
  @Trimmed()
  @MinLength(1, { message: 'FILES_S3_REGION must be a region name' })
  filesS3Region = 'us-east-1';

  /** Path-style addressing (`endpoint/bucket/key`), which MinIO and most self-hosted stores need. */
  @EnvBool('FILES_S3_FORCE_PATH_STYLE')
  filesS3ForcePathStyle = false;

  /** What every object's name starts with in the bucket (a bucket shared with other data). */
  @Expose({ name: 'FILES_S3_PREFIX' })
  @Trimmed()
  @Matches(/^[A-Za-z0-9!_.*'()/-]{0,200}$/, { message: 'FILES_S3_PREFIX must be a plain key prefix' })
  filesS3Prefix = '';

  /** Bytes of one uploaded file; OpenAI's 200 MB for a batch input file is the most. */
  @EnvInt('FILES_MAX_BYTES', 1, OPENAI_FILE_LIMITS.batchBytes)
  filesMaxBytes = OPENAI_FILE_LIMITS.batchBytes;

  /** Lines of one batch input file (one request each); OpenAI's 50,000 is the most. */
  @EnvInt('FILES_MAX_LINES', 1, OPENAI_FILE_LIMITS.batchLines)
  filesMaxLines = OPENAI_FILE_LIMITS.batchLines;

  /** How long a file is kept when its upload names no `expires_after`: 30 days, as OpenAI keeps batch files. */
  @EnvInt('FILES_EXPIRY_SECONDS', 60, 366 * 24 * 3600)
  filesExpirySeconds = 30 * 24 * 3600;

  /** An upload not received completely within this long is refused (408) and nothing of it is kept. */
  @EnvInt('FILES_UPLOAD_TIMEOUT_MS', 1000, 24 * 3_600_000)
  filesUploadTimeoutMs = 15 * 60_000;

  /** How often expired files (and what crashed uploads left) are looked for and removed from the store. */
  @EnvInt('FILES_SWEEP_INTERVAL_MS', 100, 3_600_000)
  filesSweepIntervalMs = 60_000;
  /** Batches (`/v1/batches`) of one API key not yet ended; one more is refused with a 429. */
  @EnvInt('BATCH_MAX_IN_FLIGHT_PER_KEY', 1, 10_000)
  batchMaxInFlightPerKey = 20;

  /** Lines of one API key's batches not yet ended; a batch that would pass it fails validation. */
  @EnvInt('BATCH_MAX_ENQUEUED_LINES_PER_KEY', 1, 100_000_000)
  batchMaxEnqueuedLinesPerKey = 500_000;

  /** Lines one batch input file may hold (OpenAI's limit is 50,000). */
  @EnvInt('BATCH_MAX_LINES', 1, 1_000_000)
  batchMaxLines = 50_000;

  /** Lines of one batch running at once: its window on its model's queue. */
  @EnvInt('BATCH_WINDOW', 1, 10_000)
  batchWindow = 64;

  /** Batches one gateway drives at once; the others wait for a gateway with room (any replica). */
  @EnvInt('BATCH_MAX_DRIVEN', 1, 1_000)
  batchMaxDriven = 8;

  /**
   * How long a gateway's lease on a batch it drives lasts unrenewed: another gateway takes a batch over
   * this long after its driver died. Renewed every third of it.
   */
  @EnvInt('BATCH_LEASE_MS', 300, 600_000)
  batchLeaseMs = 15_000;

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
  if (config.adminPort !== undefined && config.adminPort === config.port) {
    throw new ConfigError([`ADMIN_PORT: must differ from PORT (both are ${config.port})`]);
  }
  if (config.adminHost !== undefined && config.adminPort === undefined) {
    throw new ConfigError(['ADMIN_HOST: set only with ADMIN_PORT (the operator listener it places)']);
  }
  if (config.adminToken !== undefined && config.apiKeys.includes(config.adminToken)) {
    throw new ConfigError(['GATEWAY_ADMIN_TOKEN: must not also be one of GATEWAY_API_KEYS']);
  }
  return config;
}
