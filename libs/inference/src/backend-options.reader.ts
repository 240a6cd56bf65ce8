import {
  isFieldRecord,
  ProblemCollector,
  RecordReader,
  type FieldRecord,
  type StringPattern,
} from '@mgw/contracts';
import { ConfigError, type CatalogModel } from '@mgw/config';

/**
 * Reads one catalog model's `backend` block for a backend's option parser: the contracts' `RecordReader`
 * in collect-all mode. Every problem (unknown options included) is thrown together from `finish`, so an
 * operator fixes the catalog in one pass; each message names the model and the field — for an element of a
 * list of options (`elements`), the list's field and the element's index too (`backend.upstreams[1].baseUrl`).
 */
export class BackendOptionReader {
  private readonly problems: ProblemCollector;
  private readonly read: RecordReader;
  private readonly record: FieldRecord;
  private readonly path: string;

  /** `owner` completes "backend.x is not an option of …", e.g. "the chat simulator". */
  constructor(
    private readonly model: CatalogModel,
    allowed: readonly string[],
    owner: string,
    /** An element of a list option: its record, its path, and the reader of the block it is in. */
    within?: { record: FieldRecord; path: string; parent: BackendOptionReader },
  ) {
    this.problems = within?.parent.problems ?? new ProblemCollector(`catalog model "${model.id}": `);
    this.record = within?.record ?? model.backend;
    this.path = within?.path ?? 'backend';
    this.read = new RecordReader(this.problems, (field) => this.name(field));
    const known = allowed.filter((k) => k !== 'kind').join(', ');
    this.read.onlyFields(this.record, allowed, `is not an option of ${owner} (known: ${known})`);
  }

  /** How problems name `field`: `backend.field`, or `backend.list[i].field` within an element. */
  name(field: string): string {
    return `${this.path}.${field}`;
  }

  /** The raw value of an option, for checks the typed readers below do not cover. */
  raw(field: string): unknown {
    return this.record[field];
  }

  has(field: string): boolean {
    return this.record[field] !== undefined;
  }

  int(field: string, bounds: { min: number; max: number }, fallback: number): number {
    return this.read.optionalInt(this.record, field, bounds, fallback);
  }

  oneOf<T extends string>(field: string, values: readonly T[], fallback: T): T {
    return this.read.optionalOneOf(this.record, field, values, fallback);
  }

  /** A non-empty string of at most `maxLength` characters; `undefined` when absent or invalid. */
  string(field: string, maxLength: number, pattern?: StringPattern): string | undefined {
    return this.read.optionalString(this.record, field, maxLength, pattern);
  }

  /** A required non-empty string; '' when missing or invalid (the problem is recorded). */
  requiredString(field: string): string {
    return this.read.requiredString(this.record, field);
  }

  /** A JSON object whose values are all strings. */
  stringRecord(field: string): Record<string, string> {
    return this.read.optionalStringRecord(this.record, field);
  }

  /**
   * A list of 1..`maxItems` objects, each read by a reader of its own whose problems name the element
   * (`backend.upstreams[2].maxConcurrency`); empty when absent or invalid (the problem is recorded).
   */
  elements(
    field: string,
    maxItems: number,
    allowed: readonly string[],
    owner: string,
  ): BackendOptionReader[] {
    const value = this.record[field];
    if (value === undefined) return [];
    if (!Array.isArray(value) || value.length === 0 || value.length > maxItems) {
      this.problem(`${this.name(field)} must be a list of 1 to ${maxItems} objects`);
      return [];
    }
    const readers: BackendOptionReader[] = [];
    value.forEach((element: unknown, index) => {
      const path = `${this.name(field)}[${index}]`;
      if (!isFieldRecord(element)) {
        this.problem(`${path} must be an object`);
        return;
      }
      readers.push(
        new BackendOptionReader(this.model, allowed, owner, { record: element, path, parent: this }),
      );
    });
    return readers;
  }

  problem(message: string): void {
    this.problems.report(message);
  }

  /** Throws all collected problems at once. */
  finish(): void {
    this.problems.throwIfAny((problems) => new ConfigError(problems));
  }
}
