import { FailFast, isFieldRecord, ProblemCollector, RecordReader } from './record.reader';

class Refused extends Error {}

const failFast = new RecordReader(new FailFast((message) => new Refused(message)), (field) => `'${field}'`);

function collecting(): { problems: ProblemCollector; read: RecordReader } {
  const problems = new ProblemCollector('model "m": ');
  return { problems, read: new RecordReader(problems, (field) => `backend.${field}`) };
}

describe('RecordReader, fail-fast', () => {
  it('returns valid fields as they are', () => {
    const record = { s: '', n: 0, x: null, o: { a: 1 } };
    expect(failFast.string(record, 's')).toBe('');
    expect(failFast.natural(record, 'n')).toBe(0);
    expect(failFast.nullableString(record, 'x')).toBeNull();
    expect(failFast.record(record.o, 'o')).toBe(record.o);
  });

  it('throws the first problem as the sink makes it, naming the field', () => {
    expect(() => failFast.string({ s: 1 }, 's')).toThrow(new Refused("'s' must be a string"));
    expect(() => failFast.natural({ n: 1.5 }, 'n')).toThrow("'n' must be a non-negative integer");
    expect(() => failFast.natural({ n: Number.MAX_SAFE_INTEGER + 2 }, 'n')).toThrow(Refused);
    expect(() => failFast.record([], 'message')).toThrow('message must be an object');
    expect(() => failFast.report('custom')).toThrow('custom');
  });
});

describe('RecordReader, collect-all', () => {
  it('keeps going after a problem with fallbacks, and reports every one with its prefix', () => {
    const { problems, read } = collecting();
    const backend = { kind: 'x', a: 0, b: 'c', d: '  ', e: { k: 1 }, extra: true };
    expect(read.optionalInt(backend, 'a', { min: 1, max: 5 }, 3)).toBe(3);
    expect(read.optionalOneOf(backend, 'b', ['x', 'y'] as const, 'x')).toBe('x');
    expect(read.optionalString(backend, 'd', 10)).toBeUndefined();
    expect(read.requiredString(backend, 'missing')).toBe('');
    expect(read.optionalStringRecord(backend, 'e')).toEqual({});
    read.onlyFields(backend, ['kind', 'a', 'b', 'd', 'e'], 'is not an option');
    expect(problems.problems).toEqual([
      'model "m": backend.a must be an integer from 1 to 5',
      "model \"m\": backend.b must be 'x' or 'y'",
      'model "m": backend.d must be a non-empty string of at most 10 characters',
      'model "m": backend.missing is required and must be a non-empty string',
      'model "m": backend.e must be an object of string values',
      'model "m": backend.extra is not an option',
    ]);
    expect(() => problems.throwIfAny((all) => new Refused(all.join('; ')))).toThrow(
      /backend\.a.*backend\.extra/,
    );
  });

  it('returns absent optional fields as their fallback without a problem, and throws nothing then', () => {
    const { problems, read } = collecting();
    expect(read.optionalInt({}, 'a', { min: 1, max: 5 }, 3)).toBe(3);
    expect(read.optionalString({}, 's', 5, { test: /^a/, says: 'must start with a' })).toBeUndefined();
    expect(read.optionalString({ s: 'abc' }, 's', 5, { test: /^a/, says: 'must start with a' })).toBe('abc');
    expect(read.optionalStringRecord({ h: { a: 'b' } }, 'h')).toEqual({ a: 'b' });
    expect(problems.problems).toEqual([]);
    expect(() => problems.throwIfAny(() => new Refused('never'))).not.toThrow();
  });

  it('reads required enumerations, bounded required strings and open-ended integer bounds', () => {
    const { problems, read } = collecting();
    expect(read.oneOf({ t: 'y' }, 't', ['x', 'y'] as const, 'x')).toBe('y');
    expect(read.oneOf({}, 't', ['x', 'y'] as const, 'x')).toBe('x');
    expect(read.requiredString({ s: 'abcd' }, 's', 4)).toBe('abcd');
    expect(read.requiredString({ s: 'abcde' }, 's', 4)).toBe('');
    expect(read.optionalInt({ n: 2 ** 40 }, 'n', { min: 1 }, 1)).toBe(2 ** 40);
    expect(read.optionalInt({ n: 0 }, 'n', { min: 1 }, 1)).toBe(1);
    expect(problems.problems).toEqual([
      "model \"m\": backend.t must be 'x' or 'y'",
      'model "m": backend.s must be at most 4 characters',
      'model "m": backend.n must be an integer of at least 1',
    ]);
  });

  it('reports a string that does not match its pattern with the pattern’s words', () => {
    const { problems, read } = collecting();
    read.optionalString({ s: 'xyz' }, 's', 5, { test: /^a/, says: 'must start with a' });
    expect(problems.problems).toEqual(['model "m": backend.s must start with a']);
  });
});

describe('isFieldRecord', () => {
  it.each([
    [{}, true],
    [[], false],
    [null, false],
    ['x', false],
  ])('%p → %p', (value, expected) => {
    expect(isFieldRecord(value)).toBe(expected);
  });
});
