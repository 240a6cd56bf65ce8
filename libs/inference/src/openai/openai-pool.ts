import { GatewayError } from '@mgw/contracts';
import { UpstreamPool, type AttemptVerdict } from '../pool/upstream-pool';
import type { OpenAIUpstreamClient } from './openai-upstream.client';
import type { OpenAIBackendOptions } from './openai.options';

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

/** The pool of an openai backend's upstreams: one client each, probed with `GET {baseUrl}/models`. */
export function openAIPool(
  model: string,
  options: OpenAIBackendOptions,
  clients: readonly OpenAIUpstreamClient[],
): UpstreamPool {
  return new UpstreamPool(
    model,
    options.upstreams.map((upstream, index) => ({
      name: upstream.name,
      maxConcurrency: upstream.maxConcurrency,
      probe: (signal: AbortSignal) => clients[index]!.probe(signal),
    })),
    options.pool,
  );
}
