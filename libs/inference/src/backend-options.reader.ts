import { ProblemCollector, RecordReader, type StringPattern } from '@mgw/contracts';
import { ConfigError, type CatalogModel } from '@mgw/config';

/**
 * Reads one catalog model's `backend` block for a backend's option parser: the contracts' `RecordReader`
 * in collect-all mode. Every problem (unknown options included) is thrown together from `finish`, so an
 * operator fixes the catalog in one pass; each message names the model and the field.
 */
export class BackendOptionReader {
  private readonly problems: ProblemCollector;
  private readonly read: RecordReader;

  /** `owner` completes "backend.x is not an option of …", e.g. "the chat simulator". */
  constructor(
    private readonly model: CatalogModel,
    allowed: readonly string[],
    owner: string,
  ) {
    this.problems = new ProblemCollector(`catalog model "${model.id}": `);
    this.read = new RecordReader(this.problems, (field) => `backend.${field}`);
    const known = allowed.filter((k) => k !== 'kind').join(', ');
    this.read.onlyFields(model.backend, allowed, `is not an option of ${owner} (known: ${known})`);
  }

  /** The raw value of an option, for checks the typed readers below do not cover. */
  raw(field: string): unknown {
    return this.model.backend[field];
  }

  int(field: string, bounds: { min: number; max: number }, fallback: number): number {
    return this.read.optionalInt(this.model.backend, field, bounds, fallback);
  }

  oneOf<T extends string>(field: string, values: readonly T[], fallback: T): T {
    return this.read.optionalOneOf(this.model.backend, field, values, fallback);
  }

  /** A non-empty string of at most `maxLength` characters; `undefined` when absent or invalid. */
  string(field: string, maxLength: number, pattern?: StringPattern): string | undefined {
    return this.read.optionalString(this.model.backend, field, maxLength, pattern);
  }

  /** A required non-empty string; '' when missing or invalid (the problem is recorded). */
  requiredString(field: string): string {
    return this.read.requiredString(this.model.backend, field);
  }

  /** A JSON object whose values are all strings. */
  stringRecord(field: string): Record<string, string> {
    return this.read.optionalStringRecord(this.model.backend, field);
  }

  problem(message: string): void {
    this.problems.report(message);
  }

  /** Throws all collected problems at once. */
  finish(): void {
    this.problems.throwIfAny((problems) => new ConfigError(problems));
  }
}
