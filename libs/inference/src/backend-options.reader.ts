import { ConfigError, type CatalogModel } from '@mgw/config';

/**
 * Reads one catalog model's `backend` block for a backend's option parser. It collects every problem
 * (unknown options included) and throws them together from `finish`, so an operator fixes the catalog in
 * one pass; each message names the model and the field.
 */
export class BackendOptionReader {
  private readonly problems: string[] = [];

  /** `owner` completes "backend.x is not an option of …", e.g. "the chat simulator". */
  constructor(
    private readonly model: CatalogModel,
    allowed: readonly string[],
    owner: string,
  ) {
    for (const key of Object.keys(model.backend)) {
      if (!allowed.includes(key)) {
        const known = allowed.filter((k) => k !== 'kind').join(', ');
        this.problem(`backend.${key} is not an option of ${owner} (known: ${known})`);
      }
    }
  }

  /** The raw value of an option, for checks the typed readers below do not cover. */
  raw(field: string): unknown {
    return this.model.backend[field];
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

  /** A non-empty string of at most `maxLength` characters; `undefined` when absent or invalid. */
  string(field: string, maxLength: number, pattern?: { test: RegExp; says: string }): string | undefined {
    const value = this.model.backend[field];
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || value.trim().length === 0 || value.length > maxLength) {
      this.problem(`backend.${field} must be a non-empty string of at most ${maxLength} characters`);
      return undefined;
    }
    if (pattern !== undefined && !pattern.test.test(value)) {
      this.problem(`backend.${field} ${pattern.says}`);
      return undefined;
    }
    return value;
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

  /** A JSON object whose values are all strings. */
  stringRecord(field: string): Record<string, string> {
    const value = this.model.backend[field];
    if (value === undefined) return {};
    if (
      typeof value !== 'object' ||
      value === null ||
      Array.isArray(value) ||
      Object.values(value).some((v) => typeof v !== 'string')
    ) {
      this.problem(`backend.${field} must be an object of string values`);
      return {};
    }
    return { ...(value as Record<string, string>) };
  }

  problem(message: string): void {
    this.problems.push(`catalog model "${this.model.id}": ${message}`);
  }

  /** Throws all collected problems at once. */
  finish(): void {
    if (this.problems.length > 0) throw new ConfigError(this.problems);
  }
}
