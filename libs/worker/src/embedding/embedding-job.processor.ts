import { Inject, Injectable } from '@nestjs/common';
import type { Job } from 'bullmq';
import { WorkerConfig } from '@mgw/config';
import { embeddingResultKeyFor, GatewayError, type EmbeddingInput } from '@mgw/contracts';
import { readEmbeddingJob } from '@mgw/request';
import { countTextTokens, shorten } from '@mgw/inference';
import { WorkerMetrics } from '@mgw/observability';
import { JobRunner, type JobOutcome } from '../job-runner';
import { OnJob } from '../on-job.decorator';
import { ServedBackends } from '../served-backends';
import { UsageReporter } from '../usage.reporter';
import { EmbeddingBatchers } from './embedding-batchers';

/** An embedding job, its request neutral (`readEmbeddingJob`). */
const EMBEDDING_JOB_READER = { read: readEmbeddingJob };

/** What the processor needs of its model's catalog entry. */
export interface EmbeddingModelLimits {
  dimensions: number;
  /** An input of more tokens is refused; absent: not checked. */
  contextTokens?: number;
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
 * Runs embedding jobs on their model's batcher: counts and checks the inputs' tokens, has the batcher embed
 * them with other jobs' inputs in one backend call, and answers with one `embedding-done` whose vectors wait
 * under a short-lived key (an answer of 2048 vectors of thousands of dimensions is tens of megabytes: it never
 * goes through pub/sub, whose flow control it would overrun).
 */
@Injectable()
export class EmbeddingJobProcessor {
  constructor(
    @Inject(JobRunner) private readonly runner: JobRunner,
    @Inject(UsageReporter) private readonly usage: UsageReporter,
    @Inject(ServedBackends) private readonly backends: Pick<ServedBackends, 'embedding'>,
    @Inject(EmbeddingBatchers) private readonly batchers: Pick<EmbeddingBatchers, 'byModel'>,
    @Inject(WorkerConfig) private readonly config: Pick<WorkerConfig, 'namespace' | 'imageResultTtlMs'>,
    @Inject(WorkerMetrics) private readonly metrics: Pick<WorkerMetrics, 'embeddingJobTaken'>,
  ) {}

  @OnJob('embedding')
  process(job: Job<unknown>, model: string): Promise<JobOutcome> {
    const served = this.backends.embedding(model).model;
    const batcher = this.batchers.byModel.get(model);
    if (batcher === undefined || served.embedding === undefined) {
      throw new Error(`embedding model ${model} has no batcher`);
    }
    const limits: EmbeddingModelLimits = {
      dimensions: served.embedding.dimensions,
      ...(served.contextTokens !== undefined && { contextTokens: served.contextTokens }),
    };
    return this.runner.run(job, EMBEDDING_JOB_READER, model, async ({ data, signal, writer }) => {
      const inputs = data.request.inputs;
      this.metrics.embeddingJobTaken(model, Date.now() - data.enqueuedAt);
      const dimensions = data.request.dimensions ?? limits.dimensions;
      if (dimensions > limits.dimensions) {
        throw GatewayError.invalidRequest(
          `This model gives vectors of at most ${limits.dimensions} dimensions.`,
          'dimensions',
        );
      }
      let promptTokens = 0;
      inputs.forEach((input, index) => {
        const tokens = inputTokens(input);
        const { contextTokens } = limits;
        if (contextTokens !== undefined && tokens > contextTokens) {
          throw inputTooLong(index, contextTokens, tokens);
        }
        promptTokens += tokens;
      });
      const vectors = await batcher.embed(inputs, signal);
      signal.throwIfAborted();
      const key = embeddingResultKeyFor(this.config.namespace, data.requestId);
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
        this.config.imageResultTtlMs,
      );
      await recorded;
    });
  }
}
