import {
  GatewayError,
  type DoneMessage,
  type EmbeddingEncodingFormat,
  type EmbeddingObject,
  type EmbeddingsResponse,
} from '@mgw/contracts';
import type { JsonRenderer, RenderContext } from '@mgw/session';

/** Bytes of one float32 value. */
const FLOAT_BYTES = 4;

/**
 * The embeddings' list, OpenAI's shape, from the packed vectors the worker stored under a short-lived key:
 * `count` vectors of `dimensions` little-endian float32 values. `base64` sends each vector's bytes as they
 * are; `float` reads them as numbers.
 */
export function embeddingList(
  packed: Buffer,
  count: number,
  dimensions: number,
  format: EmbeddingEncodingFormat,
  model: string,
  promptTokens: number,
): EmbeddingsResponse {
  const bytesPerVector = dimensions * FLOAT_BYTES;
  if (packed.length !== count * bytesPerVector) {
    throw GatewayError.workerFailed(
      `The worker stored ${packed.length} bytes for ${count} vectors of ${dimensions} dimensions.`,
    );
  }
  const data: EmbeddingObject[] = new Array<EmbeddingObject>(count);
  for (let index = 0; index < count; index++) {
    const start = index * bytesPerVector;
    data[index] = {
      object: 'embedding',
      index,
      embedding:
        format === 'base64'
          ? packed.toString('base64', start, start + bytesPerVector)
          : readFloats(packed, start, dimensions),
    };
  }
  return { object: 'list', data, model, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } };
}

function readFloats(packed: Buffer, start: number, dimensions: number): number[] {
  const values = new Array<number>(dimensions);
  for (let i = 0; i < dimensions; i++) values[i] = packed.readFloatLE(start + i * FLOAT_BYTES);
  return values;
}

/**
 * An embedding request's JSON answer: the job's one `embedding-done` names the key of its vectors, fetched
 * (and deleted) when it arrives. Embeddings have no text, tool calls or images.
 */
export class EmbeddingListRenderer implements JsonRenderer<EmbeddingsResponse> {
  constructor(
    private readonly context: RenderContext,
    private readonly format: EmbeddingEncodingFormat,
    private readonly fetch: (key: string) => Promise<Buffer | null>,
  ) {}

  delta(): void {}

  toolCall(): void {}

  image(): void {}

  async done(message: DoneMessage): Promise<EmbeddingsResponse> {
    if (message.kind !== 'embedding-done') {
      throw GatewayError.workerFailed(`The worker answered an embedding request with ${message.kind}.`);
    }
    const packed = await this.fetch(message.key);
    if (packed === null)
      throw GatewayError.workerFailed('The embeddings expired before they could be delivered.');
    return embeddingList(
      packed,
      message.count,
      message.dimensions,
      this.format,
      this.context.model,
      message.usage.prompt_tokens,
    );
  }
}
