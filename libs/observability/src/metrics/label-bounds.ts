/** The value a label takes when the real one is not in its bounded set. */
export const OTHER_LABEL = 'other';

/**
 * A label whose values are bounded: either a fixed set (catalog models) or the first `max` values seen.
 * Anything else is counted under `other`, so a flood of odd values cannot grow the series count.
 */
export class BoundedLabel {
  private readonly values: Set<string>;

  private constructor(
    values: Iterable<string>,
    private readonly max: number,
    private readonly open: boolean,
  ) {
    this.values = new Set(values);
  }

  /** Only these values; anything else is `other`. */
  static fixed(values: Iterable<string>): BoundedLabel {
    return new BoundedLabel(values, 0, false);
  }

  /** The first `max` distinct values seen; later newcomers are `other`. */
  static capped(max: number): BoundedLabel {
    return new BoundedLabel([], max, true);
  }

  of(value: string | null | undefined): string {
    if (value === null || value === undefined || value === '') return OTHER_LABEL;
    if (this.values.has(value)) return value;
    if (this.open && this.values.size < this.max) {
      this.values.add(value);
      return value;
    }
    return OTHER_LABEL;
  }
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The route pattern (`/v1/models/:id`), never the raw path; requests no route matched share one value. */
export function routeLabel(pattern: string | undefined): string {
  return pattern && pattern.length > 0 ? pattern : 'unmatched';
}

export function methodLabel(method: string | undefined): string {
  const upper = (method ?? '').toUpperCase();
  return METHODS.has(upper) ? upper : 'OTHER';
}

export function statusLabel(status: number): string {
  return Number.isInteger(status) && status >= 100 && status <= 599 ? String(status) : 'unknown';
}

export const REJECTION_REASONS = ['auth', 'validation', 'unavailable', 'overloaded', 'too_large'] as const;
export type RejectionReason = (typeof REJECTION_REASONS)[number];

/**
 * Why a request was refused before any work was done, from the error it was answered with; null for
 * errors that are not refusals (a worker failing, a deadline passing).
 */
export function rejectionReasonOf(status: number, code: string | null | undefined): RejectionReason | null {
  if (status === 401 || status === 403) return 'auth';
  if (status === 413) return 'too_large';
  if (status === 429 || code === 'overloaded') return 'overloaded';
  if (status === 503) return 'unavailable';
  // 408 and 499 are the client's own timeout or disconnect, not a refusal.
  if (status >= 400 && status < 500 && status !== 408 && status !== 499) return 'validation';
  return null;
}
