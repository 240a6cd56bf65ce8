import { GatewayError } from '@mgw/contracts';
import { Pool, type Dispatcher } from 'undici';
import type { OpenAIUpstreamOptions } from './openai.options';
import { upstreamStatusError, upstreamTransportError, type UpstreamHeaders } from './upstream-error.mapper';

/**
 * A bound on one upstream response (ten large base64 PNGs are well under it), so a broken upstream
 * cannot fill the worker's memory.
 */
export const MAX_RESPONSE_BYTES = 256 * 1024 * 1024;
/** Enough of an error body to find its message; the rest is dropped unread. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** vLLM's exposition with its histograms is some 100 KB; beyond this it is not a metrics page. */
const MAX_METRICS_BYTES = 4 * 1024 * 1024;

export interface UpstreamResponse {
  headers: UpstreamHeaders;
  body: Dispatcher.ResponseData['body'];
}

async function readCapped(body: AsyncIterable<Buffer>, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= limit) break;
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}

/**
 * HTTP to one OpenAI-compatible upstream over a keep-alive pool. Every failure leaves here as a
 * GatewayError (see upstream-error.mapper), except an abort, which leaves as the signal's reason.
 */
export class OpenAIUpstreamClient {
  private readonly pool: Pool;
  private readonly headers: Record<string, string>;

  constructor(private readonly options: OpenAIUpstreamOptions) {
    this.pool = new Pool(options.baseUrl.origin, {
      connections: options.maxConnections,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      maxResponseSize: MAX_RESPONSE_BYTES,
    });
    this.headers = {
      ...options.headers,
      'content-type': 'application/json',
      ...(options.apiKey === null ? {} : { authorization: `Bearer ${options.apiKey}` }),
    };
  }

  /** POSTs `body` as JSON and reads the whole 2xx answer as text (a JSON answer, not a stream). */
  async postForText(path: string, body: unknown, signal: AbortSignal): Promise<string> {
    const response = await this.post(path, body, 'application/json', signal);
    try {
      return await response.body.text();
    } catch (error) {
      throw this.failure(error, signal);
    } finally {
      if (!response.body.readableEnded) response.body.destroy();
    }
  }

  /**
   * POSTs `body` as JSON; resolves with a 2xx response whose body the caller must consume or destroy.
   * The signal aborts the request at any stage, closing its connection so the upstream stops too.
   */
  async post(path: string, body: unknown, accept: string, signal: AbortSignal): Promise<UpstreamResponse> {
    let response: Dispatcher.ResponseData;
    try {
      response = await this.pool.request({
        method: 'POST',
        path: `${this.options.baseUrl.pathname}${path}`,
        headers: { ...this.headers, accept },
        body: JSON.stringify(body),
        signal,
      });
    } catch (error) {
      throw this.failure(error, signal);
    }
    if (response.statusCode >= 200 && response.statusCode < 300) {
      return { headers: response.headers, body: response.body };
    }
    let text = '';
    try {
      text = await readCapped(response.body, MAX_ERROR_BODY_BYTES);
    } catch {
      signal.throwIfAborted();
      // The status alone still says what happened.
    } finally {
      response.body.destroy();
    }
    throw this.redacted(upstreamStatusError(response.statusCode, text, response.headers));
  }

  /**
   * The active health check while the upstream is out of service: `GET {baseUrl}/models` must answer 2xx
   * within the signal's time. Resolves, or rejects with the reason.
   */
  async probe(signal: AbortSignal): Promise<void> {
    const response = await this.pool.request({
      method: 'GET',
      path: `${this.options.baseUrl.pathname}/models`,
      headers: { ...this.headers, accept: 'application/json' },
      signal,
    });
    // Read to the end (bounded) so the connection goes back to the pool.
    await readCapped(response.body, MAX_ERROR_BODY_BYTES).finally(() => response.body.destroy());
    if (response.statusCode < 200 || response.statusCode >= 300) {
      throw new Error(`GET /models answered ${response.statusCode}`);
    }
  }

  /**
   * The server's Prometheus metrics: `GET /metrics` at the base URL's path less a trailing `/v1` (vLLM,
   * SGLang and llama.cpp server publish it at the root). Rejects unless 2xx within the signal's time.
   */
  async metrics(signal: AbortSignal): Promise<string> {
    const root = this.options.baseUrl.pathname.replace(/\/v1$/, '');
    const response = await this.pool.request({
      method: 'GET',
      path: `${root}/metrics`,
      headers: { ...this.headers, accept: 'text/plain' },
      signal,
    });
    const text = await readCapped(response.body, MAX_METRICS_BYTES).finally(() => response.body.destroy());
    if (response.statusCode < 200 || response.statusCode >= 300) {
      throw new Error(`GET /metrics answered ${response.statusCode}`);
    }
    return text;
  }

  /** What to throw for `error`, caught while talking to the upstream under `signal`. */
  failure(error: unknown, signal: AbortSignal): unknown {
    if (signal.aborted) return signal.reason;
    if (error instanceof GatewayError) return error;
    return upstreamTransportError(error, this.options.timeoutMs);
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  /** An upstream that echoes the key in an error message must not get it to our clients. */
  private redacted(error: GatewayError): GatewayError {
    const key = this.options.apiKey;
    if (key === null || !error.message.includes(key)) return error;
    return new GatewayError(
      error.status,
      error.type,
      error.code,
      error.message.split(key).join('[redacted]'),
      error.param,
      error.headers,
    );
  }
}
