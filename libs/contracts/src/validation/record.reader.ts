/**
 * The one way non-HTTP data is checked (reply and cancel messages, catalog backend options, …): a
 * `RecordReader` reads typed fields out of an untrusted JSON record and hands every problem to a
 * `ProblemSink`. The sink decides the mode:
 * - `FailFast` throws on the first problem. Protocol messages use it: a bad message is dropped whole, and
 *   the reply parser runs per token, so a reader is built once per module and a read allocates nothing.
 * - `ProblemCollector` keeps every problem and the read goes on with a fallback value, so an operator sees
 *   all of a file's mistakes in one pass (the catalog).
 * HTTP bodies are not read here: they are class-validator DTOs at the edge.
 */

/** A parsed JSON object whose fields are not checked yet. */
export type FieldRecord = Readonly<Record<string, unknown>>;

/** Where a reader's problems go. */
export interface ProblemSink {
  /** Records one problem; a fail-fast sink throws instead of returning. */
  report(message: string): void;
}

/** Throws the first problem, as the error `toError` makes of it. */
export class FailFast implements ProblemSink {
  constructor(private readonly toError: (message: string) => Error) {}

  report(message: string): never {
    throw this.toError(message);
  }
}

/** Keeps every problem, each prefixed (e.g. with the model it belongs to), to be thrown together. */
export class ProblemCollector implements ProblemSink {
  private readonly collected: string[] = [];

  constructor(private readonly prefix = '') {}

  report(message: string): void {
    this.collected.push(this.prefix + message);
  }

  get problems(): readonly string[] {
    return this.collected;
  }

  /** Throws every problem at once, as the error `toError` makes of them; returns when there were none. */
  throwIfAny(toError: (problems: string[]) => Error): void {
    if (this.collected.length > 0) throw toError([...this.collected]);
  }
}

export function isFieldRecord(value: unknown): value is FieldRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Integer bounds, both inclusive; no `max` means any safe integer from `min`. */
export interface IntBounds {
  min: number;
  max?: number;
}

/** A pattern a string must match, and how a problem completes "<field> …" when it does not. */
export interface StringPattern {
  test: RegExp;
  says: string;
}

/**
 * Typed reads of one record's fields. Each read returns the value, or reports "<field> must be …" (the
 * field named by `name`, e.g. `'seq'` or `backend.seq`) and returns a fallback, which only a collecting sink
 * ever sees. Optional reads return their fallback when the field is absent, without a problem.
 */
export class RecordReader {
  constructor(
    private readonly sink: ProblemSink,
    private readonly name: (field: string) => string = (field) => field,
  ) {}

  /** Reports a problem the typed reads do not cover, e.g. a value outside an enumeration. */
  report(message: string): void {
    this.sink.report(message);
  }

  /** `value` as a record; `what` names it whole ("message", "'usage'"). */
  record(value: unknown, what: string): FieldRecord {
    if (isFieldRecord(value)) return value;
    this.sink.report(`${what} must be an object`);
    return {};
  }

  /** Any string, the empty one included. */
  string(record: FieldRecord, field: string): string {
    const value = record[field];
    if (typeof value === 'string') return value;
    this.sink.report(`${this.name(field)} must be a string`);
    return '';
  }

  /** A string or null (present either way). */
  nullableString(record: FieldRecord, field: string): string | null {
    return record[field] === null ? null : this.string(record, field);
  }

  /** A safe integer ≥ 0. */
  natural(record: FieldRecord, field: string): number {
    const value = record[field];
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
    this.sink.report(`${this.name(field)} must be a non-negative integer`);
    return 0;
  }

  /** A required string with something besides whitespace in it, of at most `maxLength` characters if given. */
  requiredString(record: FieldRecord, field: string, maxLength?: number): string {
    const value = record[field];
    if (typeof value !== 'string' || value.trim().length === 0) {
      this.sink.report(`${this.name(field)} is required and must be a non-empty string`);
      return '';
    }
    if (maxLength !== undefined && value.length > maxLength) {
      this.sink.report(`${this.name(field)} must be at most ${maxLength} characters`);
      return '';
    }
    return value;
  }

  /** An integer within `bounds`; `fallback` when absent or invalid. */
  optionalInt(record: FieldRecord, field: string, bounds: IntBounds, fallback: number): number {
    const value = record[field];
    if (value === undefined) return fallback;
    const { min, max = Number.MAX_SAFE_INTEGER } = bounds;
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max)
      return value;
    this.sink.report(
      bounds.max === undefined
        ? `${this.name(field)} must be an integer of at least ${min}`
        : `${this.name(field)} must be an integer from ${min} to ${max}`,
    );
    return fallback;
  }

  /** One of `values`, required; `fallback` when invalid. */
  oneOf<T extends string>(record: FieldRecord, field: string, values: readonly T[], fallback: T): T {
    const value = record[field];
    if (typeof value === 'string' && (values as readonly string[]).includes(value)) return value as T;
    this.sink.report(`${this.name(field)} must be ${values.map((v) => `'${v}'`).join(' or ')}`);
    return fallback;
  }

  /** One of `values`; `fallback` when absent or invalid. */
  optionalOneOf<T extends string>(record: FieldRecord, field: string, values: readonly T[], fallback: T): T {
    return record[field] === undefined ? fallback : this.oneOf(record, field, values, fallback);
  }

  /** A non-empty string of at most `maxLength` characters, matching `pattern` if given; `undefined` when absent or invalid. */
  optionalString(
    record: FieldRecord,
    field: string,
    maxLength: number,
    pattern?: StringPattern,
  ): string | undefined {
    const value = record[field];
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || value.trim().length === 0 || value.length > maxLength) {
      this.sink.report(`${this.name(field)} must be a non-empty string of at most ${maxLength} characters`);
      return undefined;
    }
    if (pattern !== undefined && !pattern.test.test(value)) {
      this.sink.report(`${this.name(field)} ${pattern.says}`);
      return undefined;
    }
    return value;
  }

  /** An object whose values are all strings, copied; `{}` when absent or invalid. */
  optionalStringRecord(record: FieldRecord, field: string): Record<string, string> {
    const value = record[field];
    if (value === undefined) return {};
    if (isFieldRecord(value) && Object.values(value).every((v) => typeof v === 'string')) {
      return { ...(value as Record<string, string>) };
    }
    this.sink.report(`${this.name(field)} must be an object of string values`);
    return {};
  }

  /** Reports every field of `record` that is not in `allowed`, as "<field> <says>". */
  onlyFields(record: FieldRecord, allowed: readonly string[], says: string): void {
    for (const field of Object.keys(record)) {
      if (!allowed.includes(field)) this.sink.report(`${this.name(field)} ${says}`);
    }
  }
}
