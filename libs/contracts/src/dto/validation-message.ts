import type { ValidationArguments } from 'class-validator';

/** Renders the offending value briefly, so a 400 says what was wrong without echoing a huge payload back. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  switch (typeof value) {
    case 'string':
      return value.length > 40 ? `a string of length ${value.length}` : JSON.stringify(value);
    case 'number':
    case 'boolean':
      return String(value);
    case 'object':
      return 'an object';
    default:
      return typeof value;
  }
}

/** Builds a class-validator message that names the expectation and the value actually received. */
export function expected(what: string): (args: ValidationArguments) => string {
  return (args) => `expected ${what}, got ${describeValue(args.value)}.`;
}
