import { GatewayError } from '@mgw/contracts';
import { type AttemptVerdict, parseEngineLoad, UpstreamPool } from '@mgw/inference';
import { OpenAIUpstreamClient } from './openai-upstream.client';
import type { OpenAIBackendOptions, OpenAIUpstreamOptions } from './openai.options';

/**
 * How an attempt's error counts: a 429 is the upstream busy (another may take the request; no health
 * signal), any other 4xx is the request's fault (not retried; the upstream is healthy), everything else —
 * refused or reset connections, timeouts, 5xx, auth refusals, garbage answers, unexpected exceptions — is
 * the upstream's failure (retried elsewhere before the first output, and counted against its circuit).
 */
export function judgeUpstreamError(error: unknown): AttemptVerdict {
  if (!(error instanceof GatewayError)) return 'failed';
  if (error.status === 429) return 'busy';
  if (error.status >= 400 && error.status < 500) return 'refused';
  return 'failed';
}

/** One attempt of a request on one upstream: its client, its options, and the attempt's signal. */
export type UpstreamAttempt<T> = (
  client: OpenAIUpstreamClient,
  upstream: OpenAIUpstreamOptions,
  signal: AbortSignal,
) => AsyncIterable<T>;

/**
 * What the openai chat, image and embedding backends share: one client per upstream, their pool (probed with
 * `GET {baseUrl}/models`), and running a request's attempts through it. A backend only says what one attempt
 * on one upstream is; which upstream, the slot it holds there and another upstream after a failure before
 * the first output are the pool's (pool/upstream-pool.ts).
 */
export class PooledUpstreams {
  readonly pool: UpstreamPool;
  private readonly clients: OpenAIUpstreamClient[];

  constructor(
    private readonly options: OpenAIBackendOptions,
    model: string,
  ) {
    this.clients = options.upstreams.map((upstream) => new OpenAIUpstreamClient(upstream));
    this.pool = new UpstreamPool(
      model,
      options.upstreams.map((upstream, index) => {
        const client = this.clients[index]!;
        const format = upstream.loadMetrics;
        return {
          name: upstream.name,
          maxConcurrency: upstream.maxConcurrency,
          probe: (signal: AbortSignal) => client.probe(signal),
          ...(format !== null && {
            readLoad: async (signal: AbortSignal) => parseEngineLoad(await client.metrics(signal), format),
          }),
        };
      }),
      options.pool,
    );
  }

  /** `prefixKey`: the request's prompt prefix key, for a pool with prefix routing (null: none). */
  run<T>(
    signal: AbortSignal,
    attempt: UpstreamAttempt<T>,
    prefixKey: string | null = null,
  ): AsyncGenerator<T> {
    return this.pool.run(
      signal,
      (index, s) => attempt(this.clients[index]!, this.options.upstreams[index]!, s),
      judgeUpstreamError,
      prefixKey,
    );
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.map((client) => client.close()));
  }
}
