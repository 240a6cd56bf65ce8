import { allowsModel, type Principal } from '@mgw/access';
import type { GatewayError, ModelEntry } from '@mgw/contracts';

/** Why a model did not serve a request and the next one was tried (the `reason` label of the counter). */
export type FallbackReason = 'unavailable' | 'overloaded' | 'failed';

/**
 * The models that may serve a request for `model` when it cannot, in order: its catalog fallbacks that the
 * key may use. One the key may not use is left out silently, as the key cannot see it anywhere else either.
 * Not transitive: a fallback's own fallbacks are not added, so each model is tried at most once.
 */
export function fallbacksFor(model: ModelEntry, principal: Principal | null): string[] {
  const declared = Array.isArray(model.fallbacks) ? model.fallbacks : [];
  const seen = new Set<string>([model.id]);
  const candidates: string[] = [];
  for (const id of declared) {
    if (typeof id !== 'string' || seen.has(id) || !allowsModel(principal, id)) continue;
    seen.add(id);
    candidates.push(id);
  }
  return candidates;
}

/**
 * Whether a refusal before anything was queued lets the next model try: the model has no live worker
 * (`model_unavailable`) or its queue is full (`overloaded`). Everything else is the client's to fix or
 * holds for every model alike (a key's own limits, an unreachable Redis), so it is the answer.
 */
export function refusalFallsBack(error: GatewayError): FallbackReason | null {
  if (error.code === 'model_unavailable') return 'unavailable';
  if (error.code === 'overloaded') return 'overloaded';
  return null;
}

/**
 * Whether a refusal at admission lets the next model try. The request's first admission (`first`: nothing
 * of it is admitted yet) refuses for the key's own limits too, which hold for every model alike: only a
 * full queue passes on. A fallback's queue admission (the request holds its admission already) refuses
 * only for its queue, or for Redis: either way that model cannot take the job now.
 */
export function admissionFallsBack(error: GatewayError, first: boolean): FallbackReason | null {
  if (error.code === 'overloaded') return 'overloaded';
  return first ? null : 'unavailable';
}

/**
 * Whether a job's error, arriving before any output, lets the next model try: the model or its upstream
 * failed (5xx, including an upstream's timeout) or the upstream is rate limiting (429 from a job is never
 * the key's own limit, which admission decides). Not the request's own deadline, and never a 4xx the
 * client caused (validation, context length, an unsupported parameter).
 */
export function jobFailureFallsBack(error: GatewayError): boolean {
  if (error.code === 'deadline_exceeded') return false;
  return error.status >= 500 || error.status === 429;
}
