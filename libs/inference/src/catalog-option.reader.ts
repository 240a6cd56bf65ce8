import { ConfigError, type CatalogModel } from '@mgw/config';

/**
 * Reads one catalog model's `backend` options and collects every problem (unknown option, wrong type, out
 * of bounds), each naming the model and the field, so an operator fixes the catalog in one pass.
 */
export class CatalogOptionReader {
  private readonly problems: string[] = [];

  /** `owner` names what the options belong to in messages, e.g. "chat simulator". */
  constructor(
    private readonly model: CatalogModel,
    allowed: readonly string[],
    owner: string,
  ) {
    for (const key of Object.keys(model.backend)) {
      if (!allowed.includes(key)) {
        const known = allowed.filter((k) => k !== 'kind').join(', ');
        this.problem(`backend.${key} is not an option of the ${owner} (known: ${known})`);
      }
    }
  }

  int(field: string, bounds: { min: number; max: number }, fallback: number): number {
    const value = this.model.backend[field];
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < bounds.min || value > bounds.max) {
      this.problem(`backend.${field} must be an integer from ${bounds.min} to ${bounds.max}`);
      return fallback;
    }
    return value;
  }

  oneOf<T extends string>(field: string, values: readonly T[], fallback: T): T {
    const value = this.model.backend[field];
    if (value === undefined) return fallback;
    if (typeof value !== 'string' || !(values as readonly string[]).includes(value)) {
      this.problem(`backend.${field} must be ${values.map((v) => `'${v}'`).join(' or ')}`);
      return fallback;
    }
    return value as T;
  }

  /** A required non-empty string; '' when missing or invalid (the problem is recorded). */
  requiredString(field: string): string {
    const value = this.model.backend[field];
    if (typeof value !== 'string' || value.trim().length === 0) {
      this.problem(`backend.${field} is required and must be a non-empty string`);
      return '';
    }
    return value;
  }

  /** Records a problem found by the caller's own checks. */
  problem(message: string): void {
    this.problems.push(`catalog model "${this.model.id}": ${message}`);
  }

  get ok(): boolean {
    return this.problems.length === 0;
  }

  /** Throws all collected problems at once. */
  finish(): void {
    if (this.problems.length > 0) throw new ConfigError(this.problems);
  }
}
