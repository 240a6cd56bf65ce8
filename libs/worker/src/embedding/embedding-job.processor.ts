import type { Job } from 'bullmq';
import {
  EmbeddingJobData,
  embeddingInputsOf,
  embeddingResultKeyFor,
  GatewayError,
  type EmbeddingInput,
} from '@mgw/contracts';
import { countTextTokens, shorten } from '@mgw/inference';
import type { JobOutcome, JobRunner } from '../job-runner';
import type { UsageReporter } from '../usage.reporter';
import type { EmbeddingInputBatcher } from './embedding.batcher';

/** What the processor needs of its model's catalog entry. */
export interface EmbeddingModelLimits {
  dimensions: number;
  /** An input of more tokens is refused; absent: not checked. */
  contextTokens?: number;
}

/** Sees each job's queue wait and inputs (metrics). */
export interface EmbeddingJobObserver {
  onJob(queueWaitMs: number, inputs: number): void;
}

/** Tokens of one input: token ids count as themselves, a text by the tokenizer. */
export function inputTokens(input: EmbeddingInput): number {
  return typeof input === 'string' ? countTextTokens(input) : input.length;
}

/** OpenAI's refusal of an input longer than the model's context. */
export function inputTooLong(index: number, contextTokens: number, tokens: number): GatewayError {
  return GatewayError.invalidRequest(
    `This model's maximum context length is ${contextTokens} tokens, however you requested ${tokens} tokens in input ${index}. Please reduce your input.`,
    'input',
    'context_length_exceeded',
  );
}

/**
 * The vectors as the gateway reads them: `dimensions` float32 values each, little-endian (what OpenAI's
 * `encoding_format: "base64"` encodes), one after the other, base64-encoded for the result key.
 */
export function packVectors(vectors: readonly Float32Array[], dimensions: number): string {
  const packed = new Float32Array(vectors.length * dimensions);
  vectors.forEach((vector, i) => {
    packed.set(vector.length === dimensions ? vector : shorten(vector, dimensions), i * dimensions);
  });
  const bytes = Buffer.from(packed.buffer, packed.byteOffset, packed.byteLength);
  // Float32Array is in the machine's byte order; every platform Node supports is little-endian, but the
  // wire says little-endian, so a big-endian machine swaps.
  if (!IS_LITTLE_ENDIAN) bytes.swap32();
  return bytes.toString('base64');
}

const IS_LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * Runs embedding jobs of one model: counts and checks the inputs' tokens, has the batcher embed them with
 * other jobs' inputs in one backend call, and answers with one `embedding-done` whose vectors wait under a
 * short-lived key (an answer of 2048 vectors of thousands of dimensions is tens of megabytes: it never
 * goes through pub/sub, whose flow control it would overrun).
 */
export class EmbeddingJobProcessor {
  constructor(
    private readonly model: string,
    private readonly limits: EmbeddingModelLimits,
    private readonly batcher: EmbeddingInputBatcher,
    private readonly runner: JobRunner,
    private readonly usage: UsageReporter,
    private readonly namespace: string,
    private readonly resultTtlMs: number,
    private readonly observer?: EmbeddingJobObserver,
  ) {}

  process(job: Job<unknown>): Promise<JobOutcome> {
    return this.runner.run(job, EmbeddingJobData, this.model, async ({ data, signal, writer }) => {
      const inputs = embeddingInputsOf(data.request.input);
      this.observer?.onJob(Date.now() - data.enqueuedAt, inputs.length);
      const dimensions = data.request.dimensions ?? this.limits.dimensions;
      if (dimensions > this.limits.dimensions) {
        throw GatewayError.invalidRequest(
          `This model gives vectors of at most ${this.limits.dimensions} dimensions.`,
          'dimensions',
        );
      }
      let promptTokens = 0;
      inputs.forEach((input, index) => {
        const tokens = inputTokens(input);
        const { contextTokens } = this.limits;
        if (contextTokens !== undefined && tokens > contextTokens) {
          throw inputTooLong(index, contextTokens, tokens);
        }
        promptTokens += tokens;
      });
      const vectors = await this.batcher.embed(inputs, signal);
      signal.throwIfAborted();
      const key = embeddingResultKeyFor(this.namespace, data.requestId);
      // Counted before the client hears the end: same connection, sent first (see ChatJobProcessor).
      const recorded = this.usage.report(data, { promptTokens, completionTokens: 0, images: 0 });
      await writer.sendWithPayload(
        {
          kind: 'embedding-done',
          key,
          count: vectors.length,
          dimensions,
          usage: { prompt_tokens: promptTokens, completion_tokens: 0 },
        },
        key,
        packVectors(vectors, dimensions),
        this.resultTtlMs,
      );
      await recorded;
    });
  }
}
