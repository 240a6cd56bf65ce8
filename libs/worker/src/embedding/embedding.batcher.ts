import type { EmbeddingInput } from '@mgw/contracts';
import type { EmbeddingBackend } from '@mgw/inference';
import { activeJobSpan, traceBatch } from '@mgw/tracing';

/** How a model's inputs are gathered into backend calls (from its catalog entry). */
export interface EmbeddingBatchPolicy {
  /** Inputs one backend call carries at most. */
  maxBatchInputs: number;
  /** How long the oldest waiting input may wait for a batch to fill while more jobs wait in the queue. */
  maxBatchDelayMs: number;
  /** The model's vector length: what every call asks for (a request wanting fewer shortens its own). */
  dimensions: number;
  /** Backend calls in flight at once; inputs gather meanwhile into the next one. */
  parallelCalls: number;
}

/** Sees each call the batcher makes (metrics). */
export interface EmbeddingBatchObserver {
  onBatch(inputs: number): void;
}

/**
 * Embeds one job's inputs as part of larger backend calls. The interface the embedding processor depends
 * on, so gathering can move onto a consumer that hands over several ready jobs at once.
 */
export interface EmbeddingInputBatcher {
  /**
   * The vectors of `inputs` (the model's full length), in order. When `signal` aborts, the inputs still
   * waiting leave their batch (the other jobs' inputs stay) and the promise rejects with its reason.
   */
  embed(inputs: readonly EmbeddingInput[], signal: AbortSignal): Promise<Float32Array[]>;
  close(): void;
}

/** A slice of one job's inputs that travels in one call (a job of more inputs than a batch is split). */
interface Entry {
  inputs: readonly EmbeddingInput[];
  arrivedAt: number;
  signal: AbortSignal;
  /** The job's span when tracing: the batch's span links to it. */
  span: ReturnType<typeof activeJobSpan>;
  /** Set once it is part of a call. */
  sent: boolean;
  resolve(vectors: Float32Array[]): void;
  reject(error: unknown): void;
}

/**
 * Gathers the inputs of the embedding jobs running at once on this worker (a model's concurrency is high:
 * jobs are tiny) into backend calls of up to `maxBatchInputs`. A call goes out when it is full; when its
 * oldest input waited `maxBatchDelayMs`; or at once when the model's queue has no job waiting, since no
 * input would come to fill it — one cheap count (`moreWaiting`) per batch decides that. While
 * `parallelCalls` calls run, inputs gather for the next one, which goes out as soon as one ends: under load
 * the batches fill by themselves, without any delay. The jobs come from the model's fetch loop, which has
 * no upstream-slot gate for embeddings and so takes what waits in one go (`JobFeed.takeReady`, up to the
 * model's concurrency) and each completion's successor in the same round trip: a burst reaches the batcher
 * at once.
 */
export class EmbeddingBatcher implements EmbeddingInputBatcher {
  private pending: Entry[] = [];
  private pendingInputs = 0;
  private inFlight = 0;
  private timer: NodeJS.Timeout | undefined;
  /** The queue was found empty since the oldest pending entry arrived: send without waiting. */
  private sendNow = false;
  private probing = false;
  private closed = false;

  constructor(
    private readonly backend: EmbeddingBackend,
    private readonly policy: EmbeddingBatchPolicy,
    /** Whether more jobs of the model wait in its queue (a failure counts as "no": never wait blind). */
    private readonly moreWaiting: () => Promise<boolean>,
    private readonly observer?: EmbeddingBatchObserver,
  ) {}

  embed(inputs: readonly EmbeddingInput[], signal: AbortSignal): Promise<Float32Array[]> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    const { maxBatchInputs } = this.policy;
    const slices: Promise<Float32Array[]>[] = [];
    for (let start = 0; start < inputs.length; start += maxBatchInputs) {
      slices.push(this.add(inputs.slice(start, start + maxBatchInputs), signal));
    }
    this.pump();
    return slices.length === 1 ? slices[0]! : Promise.all(slices).then((parts) => parts.flat());
  }

  /** Refuses what still waits; calls in flight finish for their jobs. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    for (const entry of this.pending) entry.reject(new Error('the embedding worker is stopping'));
    this.pending = [];
    this.pendingInputs = 0;
  }

  private add(inputs: readonly EmbeddingInput[], signal: AbortSignal): Promise<Float32Array[]> {
    return new Promise((resolve, reject) => {
      const leave = () => {
        if (!entry.sent) this.remove(entry);
        reject(signal.reason as Error);
      };
      const entry: Entry = {
        inputs,
        arrivedAt: Date.now(),
        signal,
        span: activeJobSpan(),
        sent: false,
        resolve: (vectors) => {
          signal.removeEventListener('abort', leave);
          resolve(vectors);
        },
        reject: (error) => {
          signal.removeEventListener('abort', leave);
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      };
      signal.addEventListener('abort', leave, { once: true });
      this.pending.push(entry);
      this.pendingInputs += inputs.length;
    });
  }

  /** A cancelled job's inputs leave the batch they waited for; nobody else's do. */
  private remove(entry: Entry): void {
    const index = this.pending.indexOf(entry);
    if (index < 0) return;
    this.pending.splice(index, 1);
    this.pendingInputs -= entry.inputs.length;
    if (this.pending.length === 0) this.reset();
  }

  private reset(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.sendNow = false;
  }

  private pump(): void {
    const { maxBatchInputs, maxBatchDelayMs, parallelCalls } = this.policy;
    while (!this.closed && this.pending.length > 0 && this.inFlight < parallelCalls) {
      const waitedMs = Date.now() - this.pending[0]!.arrivedAt;
      if (this.pendingInputs >= maxBatchInputs || this.sendNow || waitedMs >= maxBatchDelayMs) {
        this.send(this.takeBatch());
        continue;
      }
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        this.pump();
      }, maxBatchDelayMs - waitedMs);
      this.probe();
      return;
    }
  }

  /** Asks once per batch whether inputs could still come; an empty queue sends what waits at once. */
  private probe(): void {
    if (this.probing) return;
    this.probing = true;
    this.moreWaiting()
      .catch(() => false)
      .then((more) => {
        this.probing = false;
        if (more || this.pending.length === 0) return;
        this.sendNow = true;
        this.pump();
      })
      .catch(() => undefined);
  }

  private takeBatch(): Entry[] {
    const batch: Entry[] = [];
    let inputs = 0;
    while (this.pending.length > 0) {
      const next = this.pending[0]!;
      if (batch.length > 0 && inputs + next.inputs.length > this.policy.maxBatchInputs) break;
      this.pending.shift();
      next.sent = true;
      inputs += next.inputs.length;
      batch.push(next);
    }
    this.pendingInputs -= inputs;
    if (this.pending.length === 0) this.reset();
    else {
      // What is left starts its own wait: it is the oldest now, and the queue may have filled meanwhile.
      clearTimeout(this.timer);
      this.timer = undefined;
      this.sendNow = false;
    }
    return batch;
  }

  private send(batch: Entry[]): void {
    this.inFlight++;
    const inputs = batch.flatMap((entry) => entry.inputs);
    this.observer?.onBatch(inputs.length);
    // The call stops only when every job in it was cancelled: the others still want their vectors.
    const controller = new AbortController();
    let live = batch.length;
    const onAbort = () => {
      if (--live === 0) controller.abort(new Error('every job of the batch was cancelled'));
    };
    for (const entry of batch) entry.signal.addEventListener('abort', onAbort, { once: true });
    traceBatch(
      batch.map((entry) => entry.span),
      inputs.length,
      () => this.backend.embed({ inputs, dimensions: this.policy.dimensions }, controller.signal),
    )
      .then((vectors) => {
        if (vectors.length !== inputs.length) {
          throw new Error(`the backend answered ${vectors.length} vectors for ${inputs.length} inputs`);
        }
        let offset = 0;
        for (const entry of batch) {
          entry.resolve(vectors.slice(offset, offset + entry.inputs.length));
          offset += entry.inputs.length;
        }
      })
      .catch((error: unknown) => {
        for (const entry of batch) entry.reject(error);
      })
      .finally(() => {
        for (const entry of batch) entry.signal.removeEventListener('abort', onAbort);
        this.inFlight--;
        this.pump();
      });
  }
}
