import type { CatalogModel } from '@mgw/config';
import {
  type BackendSettings,
  type EmbeddingBackend,
  type EmbeddingBatchRequest,
  shorten,
  type UpstreamPool,
} from '@mgw/inference';
import type { OpenAIUpstreamClient } from './openai-upstream.client';
import { PooledUpstreams } from './pooled-upstreams';
import { parseOpenAIBackendOptions, type OpenAIBackendOptions } from './openai.options';
import { upstreamProtocolError } from './upstream-error.mapper';

/**
 * Embeddings through an OpenAI-compatible upstream (vLLM, TEI's OpenAI route, Ollama, OpenAI): one
 * `POST /embeddings` per batch the worker gathered, through the model's upstream pool (slots, circuits,
 * retries on another upstream, errors mapped as for chat). Vectors come back as base64 float32, the
 * smallest form and the exact values, and are checked: one per input, in order, at least the model's length.
 */
export class OpenAIEmbeddingBackend implements EmbeddingBackend {
  private readonly upstreams: PooledUpstreams;

  constructor(
    private readonly options: OpenAIBackendOptions,
    model: string,
  ) {
    this.upstreams = new PooledUpstreams(options, model);
  }

  get upstreamPool(): UpstreamPool {
    return this.upstreams.pool;
  }

  static fromCatalog(this: void, model: CatalogModel, settings: BackendSettings): OpenAIEmbeddingBackend {
    return new OpenAIEmbeddingBackend(parseOpenAIBackendOptions(model, settings), model.id);
  }

  /** As many batches at once as the pool has slots: each call holds one. */
  get parallelCalls(): number {
    return this.options.upstreams.reduce((sum, upstream) => sum + upstream.maxConcurrency, 0);
  }

  async embed(request: EmbeddingBatchRequest, signal: AbortSignal): Promise<Float32Array[]> {
    for await (const vectors of this.upstreams.run(signal, (client, upstream, s) =>
      this.attempt(client, upstream.upstreamModel, request, s),
    )) {
      return vectors;
    }
    throw upstreamProtocolError('answered the embedding request with nothing');
  }

  private async *attempt(
    client: OpenAIUpstreamClient,
    upstreamModel: string,
    request: EmbeddingBatchRequest,
    signal: AbortSignal,
  ): AsyncGenerator<Float32Array[]> {
    signal.throwIfAborted();
    const text = await client.postForText(
      '/embeddings',
      { model: upstreamModel, input: request.inputs, encoding_format: 'base64' },
      signal,
    );
    yield readUpstreamVectors(text, request.inputs.length, request.dimensions);
  }

  async close(): Promise<void> {
    await this.upstreams.close();
  }
}

/** An upstream's vector: base64 float32 (asked for) or floats (servers that ignore `encoding_format`). */
function readVector(value: unknown, index: number): Float32Array {
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'base64');
    if (bytes.length % 4 !== 0) throw upstreamProtocolError(`returned embedding ${index} of a broken length`);
    const vector = new Float32Array(bytes.length / 4);
    for (let i = 0; i < vector.length; i++) vector[i] = bytes.readFloatLE(i * 4);
    return vector;
  }
  if (Array.isArray(value) && value.every((x) => typeof x === 'number' && Number.isFinite(x))) {
    return Float32Array.from(value as number[]);
  }
  throw upstreamProtocolError(`returned embedding ${index} as neither base64 nor numbers`);
}

/**
 * The `count` vectors of an upstream's answer, in input order (by `index`). A vector of `dimensions` values
 * stays as the upstream sent it (an upstream that does not normalise, or a model whose norm carries meaning,
 * keeps its numbers); a longer one is cut to `dimensions` and rescaled to unit length, as shorter
 * text-embedding-3 vectors are.
 */
export function readUpstreamVectors(text: string, count: number, dimensions: number): Float32Array[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw upstreamProtocolError('answered the embedding request with something other than JSON');
  }
  const data = (parsed as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw upstreamProtocolError('answered the embedding request without a data list');
  if (data.length !== count)
    throw upstreamProtocolError(`returned ${data.length} embeddings for ${count} inputs`);
  const vectors = new Array<Float32Array | undefined>(count);
  data.forEach((item: unknown, position) => {
    const { index = position, embedding } = (item ?? {}) as { index?: unknown; embedding?: unknown };
    if (
      typeof index !== 'number' ||
      !Number.isInteger(index) ||
      index < 0 ||
      index >= count ||
      vectors[index]
    ) {
      throw upstreamProtocolError(`returned an embedding with a wrong index (${String(index)})`);
    }
    const vector = readVector(embedding, index);
    if (vector.length < dimensions) {
      throw upstreamProtocolError(
        `returned ${vector.length} dimensions where the catalog declares ${dimensions}`,
      );
    }
    vectors[index] = vector.length === dimensions ? vector : shorten(vector, dimensions);
  });
  return vectors as Float32Array[];
}
