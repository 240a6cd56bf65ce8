import type { CatalogModel } from '@mgw/config';
import type {
  BackendSettings,
  GeneratedImage,
  ImageBackend,
  ImageInferenceRequest,
  UpstreamPool,
} from '@mgw/inference';
import type { OpenAIUpstreamClient } from './openai-upstream.client';
import { PooledUpstreams } from './pooled-upstreams';
import { parseOpenAIBackendOptions, type OpenAIBackendOptions } from './openai.options';
import { upstreamProtocolError } from './upstream-error.mapper';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** Signature, IHDR length and type, then width and height as big-endian 32-bit integers. */
const PNG_HEADER_BYTES = 24;

export function toUpstreamImageRequest(request: ImageInferenceRequest, upstreamModel: string): object {
  return {
    model: upstreamModel,
    prompt: request.prompt,
    n: request.n,
    size: `${request.width}x${request.height}`,
    response_format: 'b64_json',
    ...(request.user !== null && { user: request.user }),
  };
}

function sniff(bytes: Buffer): string {
  if (bytes.subarray(0, 3).equals(Buffer.from([0xff, 0xd8, 0xff]))) return 'JPEG';
  if (
    bytes.subarray(0, 4).toString('latin1') === 'RIFF' &&
    bytes.subarray(8, 12).toString('latin1') === 'WEBP'
  )
    return 'WebP';
  return 'unrecognised';
}

/** Checks that `bytes` is a PNG of the requested size: clients were promised exactly that. */
export function checkPng(bytes: Buffer, width: number, height: number, index: number): void {
  if (bytes.length < PNG_HEADER_BYTES || !bytes.subarray(0, 8).equals(PNG_SIGNATURE)) {
    throw upstreamProtocolError(`returned image ${index} as ${sniff(bytes)} data, not PNG`);
  }
  const actual = { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
  if (actual.width !== width || actual.height !== height) {
    throw upstreamProtocolError(
      `returned image ${index} at ${actual.width}x${actual.height} for a ${width}x${height} request`,
    );
  }
}

/** Images through an OpenAI-compatible upstream: POST /images/generations with `b64_json`, then PNG checks. */
export class OpenAIImageBackend implements ImageBackend {
  private readonly upstreams: PooledUpstreams;

  constructor(options: OpenAIBackendOptions, model: string) {
    this.upstreams = new PooledUpstreams(options, model);
  }

  get upstreamPool(): UpstreamPool {
    return this.upstreams.pool;
  }

  /** `this: void`: the backend factory keeps this function in a map and calls it unbound. */
  static fromCatalog(this: void, model: CatalogModel, settings: BackendSettings): OpenAIImageBackend {
    return new OpenAIImageBackend(parseOpenAIBackendOptions(model, settings), model.id);
  }

  generate(request: ImageInferenceRequest, signal: AbortSignal): AsyncGenerator<GeneratedImage> {
    return this.upstreams.run(signal, (client, upstream, s) =>
      this.attempt(client, upstream.upstreamModel, request, s),
    );
  }

  private async *attempt(
    client: OpenAIUpstreamClient,
    upstreamModel: string,
    request: ImageInferenceRequest,
    signal: AbortSignal,
  ): AsyncGenerator<GeneratedImage> {
    signal.throwIfAborted();
    const text = await client.postForText(
      '/images/generations',
      toUpstreamImageRequest(request, upstreamModel),
      signal,
    );
    const items = readImageItems(text, request.n);
    for (const [index, item] of items.entries()) {
      const png = Buffer.from(item.b64, 'base64');
      checkPng(png, request.width, request.height, index);
      signal.throwIfAborted();
      yield { index, png, revisedPrompt: item.revisedPrompt ?? request.prompt };
    }
  }

  close(): Promise<void> {
    return this.upstreams.close();
  }
}

function readImageItems(text: string, n: number): Array<{ b64: string; revisedPrompt: string | null }> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw upstreamProtocolError('answered the image request with something other than JSON');
  }
  const data = (parsed as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw upstreamProtocolError('answered the image request without a data list');
  if (data.length !== n) throw upstreamProtocolError(`returned ${data.length} of ${n} images`);
  return data.map((item: unknown, index) => {
    const { b64_json: b64, revised_prompt: revised } = (item ?? {}) as Record<string, unknown>;
    if (typeof b64 !== 'string' || b64.length === 0) {
      throw upstreamProtocolError(`returned image ${index} without b64_json`);
    }
    return { b64, revisedPrompt: typeof revised === 'string' && revised.length > 0 ? revised : null };
  });
}
