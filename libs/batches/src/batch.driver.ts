import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { setImmediate as yieldToLoop, setTimeout as sleep } from 'node:timers/promises';
import type { BudgetLimits, Principal } from '@mgw/access';
import type { FileCatalog } from '@mgw/files';
import { isTerminal, nextBatchStep, type BatchEvent } from './batch-status.machine';
import type { BatchLineExecutor, LineOutcome } from './batch-line.executor';
import { parseBatchLine } from './batch-line.parser';
import type { BatchMetrics } from './batch.metrics';
import type {
  BatchEnding,
  BatchError,
  BatchInputLine,
  BatchObject,
  BatchResultLine,
  BatchStatus,
} from './batch.types';
import { inputLines } from './input-lines.reader';
import type { BatchRecord, BatchStore, PrincipalSnapshot, ResultToKeep } from './store/batch.store';

/** What a driver works with: the store, the files, the front-ends, and its bounds. */
export interface DriverDeps {
  store: BatchStore;
  catalog: FileCatalog;
  executor: Pick<BatchLineExecutor, 'check' | 'run'>;
  metrics: Pick<BatchMetrics, 'lineFinished' | 'batchEnded'>;
  /** Lines of the batch running at once. */
  window: number;
  maxLines: number;
  logger: { warn(message: string): void; error(message: string): void };
  /** False once the gateway drains: no line starts, those running finish and are kept. */
  accepting?: () => boolean;
  /**
   * The budgets the owner's lines spend now (its key's, its team's): read live, as an operator may set or
   * change them while the batch runs; absent = none.
   */
  budgets?: (owner: PrincipalSnapshot) => Promise<OwnerBudgets>;
}

/** A batch owner's budgets as they stand: null where there is none. */
export interface OwnerBudgets {
  key: BudgetLimits | null;
  team: BudgetLimits | null;
}

/** How long a driver spends against the budgets it read before it reads them again. */
const BUDGETS_FRESH_MS = 5_000;

/** Validation reports this many errors at most (the rest of the file is still read for its count). */
const MAX_REPORTED_ERRORS = 1_000;
/** Results read from Redis at once while the files are written. */
const RESULTS_PAGE = 500;
/** Refusals a line is tried again after (a full queue, a model starting): the waits double from the first. */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 30_000;
const MAX_ATTEMPTS = 8;
/** A cancel or an expiry keeps its lines' errors this many lines, or about this many bytes, per Redis call. */
const CLOSE_CHUNK_LINES = 256;
const CLOSE_CHUNK_BYTES = 256 * 1024;

/** Stored results carry whether they go to the output file (`o`) or the error file (`e`) as their first byte. */
const TO_OUTPUT = 'o';
const TO_ERRORS = 'e';

const ENDED_LINE: Record<Exclude<BatchEnding, 'completed'>, { code: string; message: string }> = {
  expired: {
    code: 'batch_expired',
    message: 'This request could not be executed before the completion window expired.',
  },
  cancelled: { code: 'batch_cancelled', message: 'This request was not executed: its batch was cancelled.' },
};

/**
 * A batch's lines run as its key, in the scheduler's `batch` tier, spending none of its interactive limits
 * nor its team's; a team's key's lines are scheduled as its team, as its live requests are, and spend the
 * key's and the team's budgets as they do.
 */
export function batchPrincipal(
  owner: PrincipalSnapshot,
  budgets: OwnerBudgets = { key: null, team: null },
): Principal {
  const team = owner.team ?? null;
  return {
    keyId: owner.keyId,
    name: owner.name,
    bootstrap: owner.bootstrap,
    models: owner.models === null ? null : new Set(owner.models),
    rpm: null,
    tpm: null,
    maxConcurrent: null,
    priority: 'batch',
    weight: owner.weight,
    budget: budgets.key,
    team: team && {
      id: team.id,
      rpm: null,
      tpm: null,
      maxConcurrent: null,
      weight: team.weight,
      budget: budgets.team,
    },
  };
}

/**
 * The id a line's usage counts once under: its batch and its `custom_id` (digested, to a bounded Redis name),
 * the same on every run of the line, whichever gateway runs it.
 */
export function batchLineOf(batchId: string, customId: string): string {
  return `${batchId}:${createHash('sha256').update(customId).digest('hex').slice(0, 32)}`;
}

/** A 429 or a 503 is the queue or the model pushing back, not the line's answer: it is tried again. */
/** A full queue or a model starting passes; a spent budget does not until its period ends. */
function retryable(outcome: LineOutcome): boolean {
  if (outcome.status === 503) return true;
  return outcome.status === 429 && errorCodeOf(outcome.body) !== 'insufficient_quota';
}

function errorCodeOf(body: unknown): unknown {
  const error = (body as { error?: { code?: unknown } } | null)?.error;
  return typeof error === 'object' && error !== null ? error.code : undefined;
}

const nowS = (): number => Math.floor(Date.now() / 1000);
const requestIdOfLine = (): string => `batch_req_${randomBytes(12).toString('hex')}`;

/** The result of a line its batch ended before it ran: the ending as its error. */
function endedResult(text: string, error: BatchResultLine['error']): BatchResultLine {
  let customId = '';
  try {
    customId = (JSON.parse(text) as BatchInputLine).custom_id;
  } catch {
    // Validated already; a line that no longer parses keeps an empty custom_id.
  }
  return { id: requestIdOfLine(), custom_id: customId, response: null, error };
}

/**
 * Drives one batch, under its lease, from the status it is at to its end: validates its input file,
 * runs its lines through their front-end a window at a time (each result kept in Redis under the line's
 * index before it counts, so a driver that dies loses no finished line and its successor runs only the
 * lines without one), and writes its output and error files. `stop` (the lease lost, the gateway
 * stopping) ends it at once and keeps nothing more.
 */
export class BatchDriver {
  private stopped = false;
  private cancelled = false;
  private expired = false;
  private expiryTimer: NodeJS.Timeout | null = null;
  /** Interrupts the retry waits of lines when the batch stops, is cancelled or expires. */
  private readonly interrupt = new AbortController();
  private batch: BatchObject | null = null;
  private model = '';
  private waiting = 0;

  constructor(
    private readonly deps: DriverDeps,
    readonly batchId: string,
  ) {}

  /** The batch's model (its first line's) and lines without a result, for the metrics. */
  get waitingLines(): { model: string; count: number; createdAt: number } | null {
    const batch = this.batch;
    return batch === null ? null : { model: this.model, count: this.waiting, createdAt: batch.created_at };
  }

  /** Runs the batch to its end, or until stopped. */
  async run(): Promise<void> {
    try {
      while (!this.stopped) {
        const record = await this.deps.store.read(this.batchId);
        if (record === undefined) {
          await this.deps.store.dropRunning(this.batchId);
          return;
        }
        // Ended by a driver that died before it cleared the batch off the running list.
        if (isTerminal(record.batch.status)) {
          await this.deps.store.ended(record.owner.keyId, this.batchId);
          return;
        }
        this.batch = record.batch;
        this.watchExpiry(record.batch);
        await this.advance(record);
      }
    } finally {
      this.stop();
      if (this.expiryTimer !== null) clearTimeout(this.expiryTimer);
    }
  }

  /** What a renewal of its lease found: null when lost (another gateway drives it now). */
  observe(status: BatchStatus | null): void {
    if (status === null) this.stop();
    else if (status === 'cancelling') this.cancel();
  }

  /** Its owner cancelled it: no line starts any more. */
  cancel(): void {
    this.cancelled = true;
    this.interrupt.abort();
  }

  stop(): void {
    this.stopped = true;
    this.interrupt.abort();
  }

  private get accepting(): boolean {
    return this.deps.accepting?.() ?? true;
  }

  private get halted(): boolean {
    return this.stopped || this.cancelled || this.expired;
  }

  private async advance(record: BatchRecord): Promise<void> {
    const { batch } = record;
    const windowOpen = batch.status === 'validating' || batch.status === 'in_progress';
    if (windowOpen && (this.expired || nowS() >= batch.expires_at)) {
      await this.step(batch, { type: 'expire' });
      return;
    }
    switch (batch.status) {
      case 'validating':
        await this.validate(record);
        return;
      case 'in_progress':
        await this.execute(record);
        return;
      case 'finalizing':
      case 'cancelling':
        await this.finalize(record);
        return;
      default:
        return;
    }
  }

  private watchExpiry(batch: BatchObject): void {
    if (this.expiryTimer !== null) return;
    const ms = Math.max(0, batch.expires_at * 1000 - Date.now());
    this.expiryTimer = setTimeout(() => {
      this.expired = true;
      this.interrupt.abort();
    }, ms);
    this.expiryTimer.unref();
  }

  /** Moves the batch on by `event`; false when it moved elsewhere meanwhile (the next read sees where). */
  private async step(
    batch: BatchObject,
    event: BatchEvent,
    fields: Record<string, string | number> = {},
    ending?: BatchEnding,
  ): Promise<boolean> {
    const next = nextBatchStep(batch.status, event, ending);
    if (next === null) return false;
    return this.deps.store.move(this.batchId, batch.status, next.status, {
      ...fields,
      ...(next.ending !== undefined && { ending: next.ending }),
    });
  }

  // ─── validating ────────────────────────────────────────────────────────────────────────────────────

  private async validate({ batch, owner }: BatchRecord): Promise<void> {
    const { store, catalog, executor, maxLines } = this.deps;
    const content = await catalog.read(owner.keyId, batch.input_file_id);
    if (content === undefined) {
      await this.refuse(batch, owner.keyId, [
        {
          code: 'invalid_file',
          message: 'The input file no longer exists.',
          param: 'input_file_id',
          line: null,
        },
      ]);
      return;
    }
    const errors: BatchError[] = [];
    const seen = new Set<string>();
    let count = 0;
    let model = '';
    for await (const { number, text } of inputLines(content)) {
      if (this.halted) return;
      if (++count > maxLines) {
        errors.push({
          code: 'too_many_lines',
          message: `The input file has more than ${maxLines} requests, the most a batch may have.`,
          param: null,
          line: number,
        });
        break;
      }
      const parsed = parseBatchLine(text, number, batch.endpoint, (endpoint, body) =>
        executor.check(endpoint, body),
      );
      if (!parsed.ok) {
        if (errors.length < MAX_REPORTED_ERRORS) errors.push(parsed.error);
        continue;
      }
      const id = parsed.line.custom_id;
      if (seen.has(id)) {
        if (errors.length < MAX_REPORTED_ERRORS) {
          errors.push({
            code: 'duplicate_custom_id',
            message:
              'The custom_id for this request is a duplicate of another request. The custom_id parameter must be unique for each request in a batch.',
            param: 'custom_id',
            line: number,
          });
        }
        continue;
      }
      seen.add(id);
      if (model === '' && typeof parsed.line.body.model === 'string') model = parsed.line.body.model;
    }
    if (this.halted) return;
    if (count === 0) {
      errors.push({
        code: 'empty_file',
        message: 'The input file has no requests.',
        param: null,
        line: null,
      });
    }
    if (errors.length > 0) {
      await this.refuse(batch, owner.keyId, errors);
      return;
    }
    if (!(await store.reserveLines(owner.keyId, batch.id, count))) {
      await this.refuse(batch, owner.keyId, [
        {
          code: 'request_limit_exceeded',
          message: `Enqueued request limit reached: this API key's batches in progress and this one's ${count} requests pass its limit. Try again once some in-progress batches have ended.`,
          param: null,
          line: null,
        },
      ]);
      return;
    }
    await this.step(batch, { type: 'validated' }, { total: count, model });
  }

  private async refuse(batch: BatchObject, ownerKeyId: string, errors: BatchError[]): Promise<void> {
    if (await this.step(batch, { type: 'invalid' }, { errors: JSON.stringify(errors) })) {
      await this.ended(ownerKeyId, batch, 'failed');
    }
  }

  // ─── in_progress ───────────────────────────────────────────────────────────────────────────────────

  private async execute({ batch, owner }: BatchRecord): Promise<void> {
    const { store, catalog, window } = this.deps;
    const finished = await store.finishedLines(batch.id);
    const content = await catalog.read(owner.keyId, batch.input_file_id);
    if (content === undefined) {
      // Its file deleted while it runs: the lines it has not run have nothing to run.
      this.deps.logger.warn(`batch ${batch.id}: its input file is gone; its unfinished lines expire`);
      this.expired = true;
      await this.step(batch, { type: 'expire' });
      return;
    }
    this.waiting = batch.request_counts.total - finished.size;
    let principal = batchPrincipal(owner, await this.budgetsOf(owner));
    let budgetsReadAt = Date.now();
    const running = new Set<Promise<void>>();
    let started = 0;
    for await (const line of inputLines(content)) {
      if (finished.has(line.index)) continue;
      while (running.size >= window) await Promise.race(running);
      if (this.halted || !this.accepting) break;
      if (Date.now() - budgetsReadAt >= BUDGETS_FRESH_MS) {
        principal = batchPrincipal(owner, await this.budgetsOf(owner));
        budgetsReadAt = Date.now();
      }
      started++;
      const run: Promise<void> = this.runLine(batch, principal, line.index, line.text).finally(() =>
        running.delete(run),
      );
      running.add(run);
    }
    await Promise.all(running);
    if (this.stopped || this.cancelled || !this.accepting) return;
    // Every line started was kept or stopped the driver, so a line still without a result lost it in Redis
    // (a failover promoted a replica the write had not reached): the next pass runs it again. A pass that
    // started nothing ends the batch all the same, so an input that no longer matches its count cannot loop.
    if (
      !this.expired &&
      started > 0 &&
      (await store.finishedLines(batch.id)).size < batch.request_counts.total
    )
      return;
    await this.step(batch, this.expired ? { type: 'expire' } : { type: 'drained' });
  }

  private budgetsOf(owner: PrincipalSnapshot): Promise<OwnerBudgets> {
    return this.deps.budgets?.(owner) ?? Promise.resolve({ key: null, team: null });
  }

  /** Runs one line to its result and keeps it, unless the driver stopped meanwhile. Never rejects. */
  private async runLine(
    batch: BatchObject,
    principal: Principal,
    index: number,
    text: string,
  ): Promise<void> {
    try {
      const line = JSON.parse(text) as BatchInputLine;
      const model = typeof line.body.model === 'string' ? line.body.model : this.model;
      if (this.model === '') this.model = model;
      const requestId = requestIdOfLine();
      const runAs: Principal = { ...principal, batchLine: batchLineOf(batch.id, line.custom_id) };
      let outcome = await this.deps.executor.run(batch.endpoint, line.body, runAs, requestId);
      for (let attempt = 1; retryable(outcome) && attempt < MAX_ATTEMPTS && !this.halted; attempt++) {
        const backoff = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (attempt - 1));
        const waitMs =
          outcome.retryAfterS === undefined ? backoff : Math.max(backoff, outcome.retryAfterS * 1000);
        await sleep(waitMs, undefined, { signal: this.interrupt.signal }).catch(() => undefined);
        if (this.halted) break;
        outcome = await this.deps.executor.run(batch.endpoint, line.body, runAs, requestId);
      }
      // A line pushed back until its batch was cancelled or expired is reported as such, not as the refusal.
      if (this.stopped || (retryable(outcome) && (this.cancelled || this.expired))) return;
      const ok = outcome.status >= 200 && outcome.status < 300;
      const result: BatchResultLine = {
        id: requestId,
        custom_id: line.custom_id,
        response: { status_code: outcome.status, request_id: requestId, body: outcome.body },
        error: null,
      };
      await this.keep(batch.id, index, result, ok);
      this.deps.metrics.lineFinished(model, ok);
    } catch (error) {
      // Redis unreachable: the driver lets go, and a later one runs the lines without a result.
      this.deps.logger.error(`batch ${batch.id}: line ${index + 1} not kept: ${String(error)}`);
      this.stop();
    }
  }

  private async keep(batchId: string, index: number, result: BatchResultLine, ok: boolean): Promise<void> {
    if (this.stopped) return;
    const kept = await this.deps.store.recordResult(
      batchId,
      index,
      `${ok ? TO_OUTPUT : TO_ERRORS}${JSON.stringify(result)}`,
      ok,
    );
    if (kept) this.waiting--;
  }

  // ─── finalizing, cancelling ────────────────────────────────────────────────────────────────────────

  private async finalize({ batch, owner, ending }: BatchRecord): Promise<void> {
    const end = ending ?? (batch.status === 'cancelling' ? 'cancelled' : 'completed');
    // Cancelled while validating: no line was accepted, so none is reported.
    const validated = batch.in_progress_at !== null;
    if (end !== 'completed' && validated && !(await this.closeUnfinished(batch, owner.keyId, end))) return;
    const counts = (await this.deps.store.read(batch.id))?.batch ?? batch;
    const files: Record<string, string> = {};
    if (validated && counts.output_file_id === null && counts.request_counts.completed > 0) {
      files.output_file_id = await this.writeFile(batch, owner.keyId, TO_OUTPUT, 'output');
    }
    if (this.stopped) return;
    if (validated && counts.error_file_id === null && counts.request_counts.failed > 0) {
      files.error_file_id = await this.writeFile(batch, owner.keyId, TO_ERRORS, 'errors');
    }
    if (this.stopped) return;
    if (await this.step(batch, { type: 'finalized' }, files, end)) {
      await this.ended(owner.keyId, batch, batch.status === 'cancelling' ? 'cancelled' : end);
    }
  }

  /**
   * Every line without a result gets its batch's ending as its error, a chunk of lines per Redis call (a
   * line that finishes meanwhile keeps its own result); false when stopped meanwhile.
   */
  private async closeUnfinished(
    batch: BatchObject,
    ownerKeyId: string,
    end: 'expired' | 'cancelled',
  ): Promise<boolean> {
    const { store, catalog } = this.deps;
    const finished = await store.finishedLines(batch.id);
    this.waiting = Math.max(0, batch.request_counts.total - finished.size);
    if (this.waiting === 0) return true;
    const content = await catalog.read(ownerKeyId, batch.input_file_id);
    if (content === undefined) return true;
    let chunk: ResultToKeep[] = [];
    let bytes = 0;
    for await (const line of inputLines(content)) {
      if (this.stopped) return false;
      if (finished.has(line.index)) continue;
      const stored = `${TO_ERRORS}${JSON.stringify(endedResult(line.text, ENDED_LINE[end]))}`;
      chunk.push({ index: line.index, line: stored });
      bytes += Buffer.byteLength(stored);
      if (chunk.length < CLOSE_CHUNK_LINES && bytes < CLOSE_CHUNK_BYTES) continue;
      if (!(await this.keepEnded(batch.id, chunk))) return false;
      chunk = [];
      bytes = 0;
    }
    return this.keepEnded(batch.id, chunk);
  }

  /** Keeps a chunk of ended lines' errors, then lets the event loop run; false when the driver stopped. */
  private async keepEnded(batchId: string, chunk: ResultToKeep[]): Promise<boolean> {
    if (this.stopped) return false;
    if (chunk.length === 0) return true;
    await this.deps.store.recordResults(batchId, chunk, false);
    // Every line of the chunk has its result now: this one, or one a line finishing meanwhile kept.
    this.waiting = Math.max(0, this.waiting - chunk.length);
    await yieldToLoop();
    return !this.stopped;
  }

  /** Writes the results of one kind, in line order, as a `batch_output` file of the batch's key. */
  private async writeFile(
    batch: BatchObject,
    ownerKeyId: string,
    kind: string,
    name: string,
  ): Promise<string> {
    const { store, catalog } = this.deps;
    const total = batch.request_counts.total;
    const batchId = batch.id;
    async function* lines(): AsyncGenerator<string> {
      for (let from = 0; from < total; from += RESULTS_PAGE) {
        const page = await store.results(batchId, from, Math.min(RESULTS_PAGE, total - from));
        let chunk = '';
        for (const stored of page) if (stored !== null && stored[0] === kind) chunk += `${stored.slice(1)}\n`;
        if (chunk !== '') yield chunk;
      }
    }
    const file = await catalog.create(
      ownerKeyId,
      { filename: `${batchId}_${name}.jsonl`, purpose: 'batch_output' },
      Readable.from(lines()),
    );
    // Kept at once: a driver that dies before the batch ends does not write this file again.
    await store.setFile(batchId, kind === TO_OUTPUT ? 'output_file_id' : 'error_file_id', file.id);
    return file.id;
  }

  private async ended(ownerKeyId: string, batch: BatchObject, status: BatchStatus): Promise<void> {
    await this.deps.store.ended(ownerKeyId, batch.id);
    this.deps.metrics.batchEnded(status, batch.created_at);
  }
}
