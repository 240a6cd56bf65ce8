import { openAsBlob } from 'node:fs';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { CliUsageError } from './keys.cli';

const OPTIONS = {
  'model-key': { type: 'string' },
  gateway: { type: 'string' },
  endpoint: { type: 'string' },
  metadata: { type: 'string', multiple: true },
  out: { type: 'string' },
  interval: { type: 'string' },
  limit: { type: 'string' },
  after: { type: 'string' },
} as const;

const DEFAULT_GATEWAY = 'http://127.0.0.1:8080';
const DEFAULT_INTERVAL_MS = 2000;
/** OpenAI's terminal statuses: nothing changes after them. */
/** Polls in a row that may fail (unreachable, 5xx) before watch gives up: a minute at the default interval. */
const WATCH_MISSES_MAX = 30;
const TERMINAL = new Set(['completed', 'failed', 'expired', 'cancelled']);

/** OpenAI's batch object, as much of it as the CLI reads. */
export interface BatchObject {
  id: string;
  status: string;
  request_counts?: { total: number; completed: number; failed: number } | null;
  output_file_id?: string | null;
  error_file_id?: string | null;
  errors?: { data?: { code?: string; message?: string; line?: number | null }[] } | null;
  [field: string]: unknown;
}

/** What the batches commands use of the world, so tests can stand in for the gateway, the clock and stderr. */
export interface BatchesIo {
  fetch: typeof fetch;
  sleep: (ms: number) => Promise<void>;
  /** Progress for a person; stdout keeps the JSON result. */
  progress: (line: string) => void;
}

/** A refusal of the gateway (exit 1), with its status and OpenAI error code when it gave one. */
export class GatewayRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | null = null,
  ) {
    super(message);
  }

  /** Unreachable, or a 5xx: a gateway restarting or a moment of overload, not a verdict on the request. */
  get transient(): boolean {
    return this.status === 0 || this.status >= 500;
  }
}

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

/** Calls to one gateway as one API key; non-2xx answers throw their OpenAI error. */
class GatewayApi {
  constructor(
    private readonly base: string,
    private readonly apiKey: string,
    private readonly io: BatchesIo,
  ) {}

  async json<T>(path: string, init: { method?: string; body?: unknown; form?: FormData } = {}): Promise<T> {
    const response = await this.send(path, init);
    return (await response.json()) as T;
  }

  async bytes(path: string): Promise<Buffer> {
    return Buffer.from(await (await this.send(path, {})).arrayBuffer());
  }

  private async send(
    path: string,
    init: { method?: string; body?: unknown; form?: FormData },
  ): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.apiKey}` };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await this.io.fetch(`${this.base}${path}`, {
        method: init.method ?? 'GET',
        headers,
        body: init.form ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
      });
    } catch (error) {
      throw new GatewayRefusal(0, `the gateway at ${this.base} could not be reached: ${String(error)}`);
    }
    if (!response.ok) throw await refusalOf(response);
    return response;
  }
}

async function refusalOf(response: Response): Promise<GatewayRefusal> {
  const text = await response.text().catch(() => '');
  let error: { message?: unknown; code?: unknown } | undefined;
  try {
    error = (JSON.parse(text) as { error?: typeof error }).error;
  } catch {
    // not JSON: the status and the start of the body say what there is to say
  }
  const code = typeof error?.code === 'string' ? error.code : null;
  const message = typeof error?.message === 'string' ? error.message : text.slice(0, 200);
  return new GatewayRefusal(response.status, `${response.status}${code ? ` ${code}` : ''}: ${message}`, code);
}

function wholeNumber(values: Values, name: 'interval' | 'limit'): number | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) === 0) throw new CliUsageError(`--${name} must be a whole number`);
  return Number(raw);
}

function onlyPositional(positionals: string[], command: string, what: string): string {
  if (positionals.length !== 1) throw new CliUsageError(`batches ${command} takes exactly one ${what}`);
  return positionals[0]!;
}

/** `--metadata k=v` pairs as OpenAI's metadata object; the gateway checks OpenAI's bounds. */
function metadataOf(pairs: string[] | undefined): Record<string, string> | undefined {
  if (pairs === undefined) return undefined;
  const metadata: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new CliUsageError(`--metadata takes key=value, not "${pair}"`);
    metadata[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return metadata;
}

/** `in_progress: 120/5000 done (3 failed)` — one line per change, for a person watching. */
export function describeProgress(batch: BatchObject): string {
  const counts = batch.request_counts;
  const done = counts ? ` ${counts.completed + counts.failed}/${counts.total} done` : '';
  const failed = counts && counts.failed > 0 ? ` (${counts.failed} failed)` : '';
  return `${batch.id} ${batch.status}${done}${failed}`;
}

async function create(api: GatewayApi, file: string, values: Values): Promise<BatchObject> {
  if (values.endpoint === undefined) throw new CliUsageError('batches create needs --endpoint');
  const metadata = metadataOf(values.metadata);
  const found = await stat(file).catch(() => null);
  if (found === null || !found.isFile()) throw new CliUsageError(`no such file: ${file}`);
  // openAsBlob reads the file as the upload goes: a large input is never held whole in memory.
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', await openAsBlob(file, { type: 'application/jsonl' }), basename(file));
  const uploaded = await api.json<{ id: string }>('/v1/files', { method: 'POST', form });
  return api.json<BatchObject>('/v1/batches', {
    method: 'POST',
    body: {
      input_file_id: uploaded.id,
      endpoint: values.endpoint,
      completion_window: '24h',
      ...(metadata && { metadata }),
    },
  });
}

async function watch(api: GatewayApi, id: string, values: Values, io: BatchesIo): Promise<unknown> {
  const interval = wholeNumber(values, 'interval') ?? DEFAULT_INTERVAL_MS;
  let last = '';
  let misses = 0;
  for (;;) {
    let batch: BatchObject;
    try {
      batch = await api.json<BatchObject>(`/v1/batches/${encodeURIComponent(id)}`);
      misses = 0;
    } catch (error) {
      // A batch outlives a gateway restart; so does its watch, over a gateway away for a while.
      if (!(error instanceof GatewayRefusal) || !error.transient || ++misses > WATCH_MISSES_MAX) throw error;
      io.progress(`${id}: ${error.message} (trying again)`);
      await io.sleep(interval);
      continue;
    }
    const line = describeProgress(batch);
    if (line !== last) io.progress(line);
    last = line;
    if (TERMINAL.has(batch.status)) {
      for (const error of batch.errors?.data ?? []) {
        io.progress(`  line ${error.line ?? '-'}: ${error.code ?? 'error'}: ${error.message ?? ''}`);
      }
      if (values.out === undefined) return batch;
      return { ...batch, downloaded: await download(api, batch, values.out, io) };
    }
    await io.sleep(interval);
  }
}

/** The batch's output and error files, as `<batch id>.output.jsonl` and `<batch id>.errors.jsonl`. */
async function download(api: GatewayApi, batch: BatchObject, dir: string, io: BatchesIo): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const written: string[] = [];
  for (const [fileId, suffix] of [
    [batch.output_file_id, 'output'],
    [batch.error_file_id, 'errors'],
  ] as const) {
    if (!fileId) continue;
    const path = join(dir, `${batch.id}.${suffix}.jsonl`);
    await writeFile(path, await api.bytes(`/v1/files/${encodeURIComponent(fileId)}/content`));
    io.progress(`wrote ${path}`);
    written.push(path);
  }
  return written;
}

/** Runs one `batches …` command against the gateway's /v1 API; returns what to print. */
export async function runBatchesCommand(argv: string[], io: BatchesIo): Promise<unknown> {
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new CliUsageError((error as Error).message);
  }
  const { values } = parsed;
  const [command, ...rest] = parsed.positionals;
  const known = ['create', 'watch', 'list', 'show', 'cancel'];
  if (command === undefined || !known.includes(command)) {
    throw new CliUsageError(`unknown batches command "${command ?? ''}"`);
  }
  const apiKey = values['model-key'];
  if (!apiKey) throw new CliUsageError(`batches ${command} needs --model-key (an API key)`);
  const gateway = (values.gateway ?? DEFAULT_GATEWAY).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]/.test(gateway)) throw new CliUsageError('--gateway must be an http(s) URL');
  const api = new GatewayApi(gateway, apiKey, io);
  switch (command) {
    case 'create':
      return create(api, onlyPositional(rest, 'create', 'JSONL file'), values);
    case 'watch':
      return watch(api, onlyPositional(rest, 'watch', 'id'), values, io);
    case 'show':
      return api.json(`/v1/batches/${encodeURIComponent(onlyPositional(rest, 'show', 'id'))}`);
    case 'cancel':
      return api.json(`/v1/batches/${encodeURIComponent(onlyPositional(rest, 'cancel', 'id'))}/cancel`, {
        method: 'POST',
      });
    default: {
      if (rest.length > 0) throw new CliUsageError('batches list takes no positional arguments');
      const query = new URLSearchParams();
      const limit = wholeNumber(values, 'limit');
      if (limit !== undefined) query.set('limit', String(limit));
      if (values.after !== undefined) query.set('after', values.after);
      const search = query.toString();
      return api.json(`/v1/batches${search ? `?${search}` : ''}`);
    }
  }
}
