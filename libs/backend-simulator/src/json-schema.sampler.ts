import { type JsonSchema, SeededRandom } from '@mgw/inference';

/**
 * Deterministic instances of a JSON Schema, for the simulator's tool-call arguments and `json_schema`
 * answers. Validity comes first: every supported keyword is honoured (see the table in docs/backends/simulator.md), and the
 * same schema, seed and words always give the same instance.
 *
 * Supported: `type` (one or a list; `null` is picked last), `const`, `enum`, `properties`, `required`,
 * `additionalProperties`, `minProperties`, `items` (schema or tuple), `prefixItems`, `minItems`, `maxItems`,
 * `uniqueItems` (best effort), `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (numbers or
 * draft-4 booleans), `multipleOf`, `minLength`, `maxLength`, `format` (date-time, date, time, email,
 * uri/url, uuid, hostname, ipv4, ipv6), `pattern` (a subset of regular expressions, see `sampleFromPattern`),
 * `anyOf`/`oneOf` (the first branch), `allOf` (merged), `$ref` to any JSON pointer within the schema
 * (`#/$defs/…`, `#/definitions/…`, percent- and `~`-escaped as openai's zod helpers write them).
 */
export interface SampleOptions {
  seed: number;
  /** Words to use where a string is wanted (e.g. the user's words); a neutral vocabulary otherwise. */
  words?: readonly string[];
}

type Schema = Record<string, unknown>;

/** Deeper than this, only what the schema requires is generated, so recursive schemas end. */
const MAX_OPTIONAL_DEPTH = 6;
/** A recursive schema whose required path never ends is cut here (the instance is then not valid). */
const MAX_DEPTH = 32;
/**
 * Work bounds whatever the schema asks for (`minItems: 1e9`, `minLength: 1e9`, a required recursion that
 * branches): values (sample calls), items per array and characters per string. Past them the instance
 * is cut short and is then not valid, which only a schema no real answer could meet gets.
 */
export const SAMPLER_LIMITS = { values: 10_000, items: 256, stringLength: 4096 } as const;
const DEFAULT_WORDS: readonly string[] = ['sample', 'value', 'alpha', 'beta', 'gamma', 'delta', 'omega'];

const isSchema = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const numberOr = (value: unknown, fallback: number): number =>
  typeof value === 'number' && Number.isFinite(value) ? value : fallback;
const codePoints = (text: string): number => [...text].length;
/** An own property even for `__proto__`, which plain assignment would turn into the prototype. */
const setProperty = (target: Record<string, unknown>, name: string, value: unknown): void => {
  Object.defineProperty(target, name, { value, enumerable: true, writable: true, configurable: true });
};

export function sampleJsonSchema(schema: JsonSchema, options: SampleOptions): unknown {
  const words = (options.words ?? []).filter((word) => /^[\p{L}\p{N}]+$/u.test(word));
  return new SchemaSampler(
    schema,
    new SeededRandom(options.seed),
    words.length > 0 ? words : DEFAULT_WORDS,
  ).sample(schema, 0);
}

class SchemaSampler {
  constructor(
    private readonly root: Schema,
    private readonly random: SeededRandom,
    private readonly words: readonly string[],
  ) {}

  private values = 0;

  sample(input: unknown, depth: number): unknown {
    if (input === false || ++this.values > SAMPLER_LIMITS.values) return null;
    if (!isSchema(input)) return this.text(1, 3);
    const schema = this.resolve(input, depth);
    if (depth > MAX_DEPTH) return null;
    if ('const' in schema) return schema.const;
    if (Array.isArray(schema.enum) && schema.enum.length > 0) {
      return schema.enum[this.random.nextInt(schema.enum.length)];
    }
    const branches = Array.isArray(schema.anyOf)
      ? schema.anyOf
      : Array.isArray(schema.oneOf)
        ? schema.oneOf
        : null;
    if (branches !== null && branches.length > 0) {
      const { anyOf: _anyOf, oneOf: _oneOf, ...rest } = schema;
      const branch: unknown = depth > MAX_OPTIONAL_DEPTH ? this.shallowest(branches) : branches[0];
      return this.sample(isSchema(branch) ? { ...rest, ...this.resolve(branch, depth) } : rest, depth + 1);
    }
    switch (this.typeOf(schema)) {
      case 'null':
        return null;
      case 'boolean':
        return this.random.nextInt(2) === 1;
      case 'integer':
        return this.number(schema, true);
      case 'number':
        return this.number(schema, false);
      case 'array':
        return this.array(schema, depth);
      case 'object':
        return this.object(schema, depth);
      default:
        return this.string(schema);
    }
  }

  /** `$ref` and `allOf` folded into one schema (siblings of `$ref` kept, as in 2019-09 and later). */
  private resolve(schema: Schema, depth: number): Schema {
    let current = schema;
    for (let hops = 0; typeof current.$ref === 'string' && hops < MAX_DEPTH; hops++) {
      const { $ref, ...rest } = current;
      const target = this.pointer($ref);
      current = isSchema(target) ? { ...target, ...rest } : rest;
    }
    if (Array.isArray(current.allOf)) {
      const { allOf, ...rest } = current;
      let merged: Schema = rest;
      for (const part of allOf as unknown[]) {
        if (!isSchema(part)) continue;
        const resolved = this.resolve(part, depth);
        merged = {
          ...resolved,
          ...merged,
          properties: { ...(resolved.properties as Schema), ...(merged.properties as Schema) },
          required: [
            ...((resolved.required as unknown[] | undefined) ?? []),
            ...((merged.required as unknown[] | undefined) ?? []),
          ],
        };
      }
      current = merged;
    }
    return current;
  }

  private pointer(ref: string): unknown {
    if (!ref.startsWith('#')) return undefined;
    let target: unknown = this.root;
    for (const raw of ref.slice(1).split('/').slice(1)) {
      let token: string;
      try {
        token = decodeURIComponent(raw);
      } catch {
        token = raw;
      }
      token = token.replace(/~1/g, '/').replace(/~0/g, '~');
      if (!isSchema(target) && !Array.isArray(target)) return undefined;
      target = Object.prototype.hasOwnProperty.call(target, token)
        ? (target as Record<string, unknown>)[token]
        : undefined;
    }
    return target;
  }

  /** The branch least likely to recurse: one without `$ref`, properties or items, else the first. */
  private shallowest(branches: unknown[]): unknown {
    return (
      branches.find((branch) => isSchema(branch) && !('$ref' in branch) && !('properties' in branch)) ??
      branches[0]
    );
  }

  private typeOf(schema: Schema): string {
    const type = schema.type;
    if (typeof type === 'string') return type;
    if (Array.isArray(type) && type.length > 0) {
      return String(type.find((candidate) => candidate !== 'null') ?? type[0]);
    }
    if ('properties' in schema || 'required' in schema || 'additionalProperties' in schema) return 'object';
    if ('items' in schema || 'prefixItems' in schema || 'minItems' in schema) return 'array';
    if ('minimum' in schema || 'maximum' in schema || 'multipleOf' in schema) return 'number';
    return 'string';
  }

  private number(schema: Schema, integer: boolean): number {
    let low = numberOr(schema.minimum, -Infinity);
    let high = numberOr(schema.maximum, Infinity);
    const exclusiveLow = schema.exclusiveMinimum;
    const exclusiveHigh = schema.exclusiveMaximum;
    // Draft 4 says exclusiveness with booleans next to minimum/maximum; later drafts with the bound itself.
    const openLow = exclusiveLow === true || (typeof exclusiveLow === 'number' && exclusiveLow >= low);
    const openHigh = exclusiveHigh === true || (typeof exclusiveHigh === 'number' && exclusiveHigh <= high);
    if (typeof exclusiveLow === 'number' && exclusiveLow >= low) low = exclusiveLow;
    if (typeof exclusiveHigh === 'number' && exclusiveHigh <= high) high = exclusiveHigh;
    const step = numberOr(schema.multipleOf, integer ? 1 : 0);
    if (low === -Infinity && high === Infinity) [low, high] = [0, 100];
    else if (low === -Infinity) low = Math.min(high - 100, 0);
    else if (high === Infinity) high = Math.max(low + 100, 0);

    if (step > 0) {
      let first = Math.ceil(low / step);
      let last = Math.floor(high / step);
      if (openLow && first * step <= low) first++;
      if (openHigh && last * step >= high) last--;
      if (integer && !Number.isInteger(step)) {
        // Multiples of a fraction that are integers: walk to the first one (bounded).
        for (let k = first; k <= Math.min(last, first + 1000); k++)
          if (Number.isInteger(k * step)) return k * step;
      }
      if (last < first) return this.tidy(first * step, step);
      // Validators test multipleOf in floating point (0.3 / 0.1 is not 3 there): a multiple that passes.
      const start = this.random.nextIntBetween(first, Math.min(last, first + 1000));
      for (let k = start, tries = 0; tries < 64; tries++, k = k >= last ? first : k + 1) {
        const value = this.tidy(k * step, step);
        if (Number.isInteger(value / step)) return value;
      }
      return this.tidy(start * step, step);
    }
    if (integer) {
      let first = Math.ceil(low);
      let last = Math.floor(high);
      if (openLow && first <= low) first++;
      if (openHigh && last >= high) last--;
      return last < first ? first : this.random.nextIntBetween(first, Math.min(last, first + 1000));
    }
    const span = high - low;
    const value = Math.round((low + span * (0.1 + 0.8 * this.random.next())) * 100) / 100;
    if (value > low && value < high) return value;
    if (!openLow) return low;
    if (!openHigh) return high;
    return low + span / 2;
  }

  /** `k * 0.1` is 0.30000000000000004; snapped to the step's decimals, it is a multiple again. */
  private tidy(value: number, step: number): number {
    const decimals = (String(step).split('.')[1] ?? '').length;
    return decimals === 0 ? value : Number(value.toFixed(decimals));
  }

  private array(schema: Schema, depth: number): unknown[] {
    const minItems = numberOr(schema.minItems, 0);
    const maxItems = numberOr(schema.maxItems, Infinity);
    const tuple = Array.isArray(schema.prefixItems)
      ? (schema.prefixItems as unknown[])
      : Array.isArray(schema.items)
        ? (schema.items as unknown[])
        : [];
    const rest = Array.isArray(schema.items)
      ? (schema.additionalItems ?? {})
      : 'items' in schema
        ? schema.items
        : {};
    const wanted = depth > MAX_OPTIONAL_DEPTH ? 0 : this.random.nextIntBetween(1, 3);
    const count = Math.min(maxItems, Math.max(minItems, tuple.length, wanted), SAMPLER_LIMITS.items);
    const items: unknown[] = [];
    const seen = new Set<string>();
    for (let i = 0; i < count; i++) {
      const itemSchema = i < tuple.length ? tuple[i] : rest;
      if (itemSchema === false) break;
      let item = this.sample(itemSchema, depth + 1);
      // uniqueItems: a few more draws for a duplicate; an enum of two cannot fill five unique slots.
      for (
        let attempt = 0;
        schema.uniqueItems === true && seen.has(JSON.stringify(item)) && attempt < 8;
        attempt++
      ) {
        item = this.sample(itemSchema, depth + 1);
      }
      if (schema.uniqueItems === true && seen.has(JSON.stringify(item)) && items.length >= minItems) break;
      seen.add(JSON.stringify(item));
      items.push(item);
    }
    return items;
  }

  private object(schema: Schema, depth: number): Record<string, unknown> {
    const properties = isSchema(schema.properties) ? schema.properties : {};
    const required = new Set(
      Array.isArray(schema.required) ? schema.required.filter((name) => typeof name === 'string') : [],
    );
    const result: Record<string, unknown> = {};
    const optionalToo = depth <= MAX_OPTIONAL_DEPTH;
    const maxProperties = numberOr(schema.maxProperties, Infinity);
    for (const [name, propertySchema] of Object.entries(properties)) {
      if (!required.has(name) && (!optionalToo || Object.keys(result).length >= maxProperties)) continue;
      if (propertySchema === false) continue;
      setProperty(result, name, this.sample(propertySchema, depth + 1));
    }
    // Required names without a property schema: anything additionalProperties allows.
    const additional = schema.additionalProperties;
    for (const name of required) {
      if (!Object.hasOwn(result, name)) {
        setProperty(result, name, this.sample(isSchema(additional) ? additional : {}, depth + 1));
      }
    }
    const minProperties = numberOr(schema.minProperties, 0);
    for (let i = 1; Object.keys(result).length < minProperties && additional !== false && i <= 64; i++) {
      const name = `${this.word()}_${i}`;
      if (!Object.hasOwn(result, name)) {
        setProperty(result, name, this.sample(isSchema(additional) ? additional : {}, depth + 1));
      }
    }
    return result;
  }

  private string(schema: Schema): string {
    const minLength = numberOr(schema.minLength, 0);
    const maxLength = numberOr(schema.maxLength, Infinity);
    const pattern = typeof schema.pattern === 'string' ? this.regex(schema.pattern) : null;
    const fits = (text: string) => {
      const length = codePoints(text);
      return length >= minLength && length <= maxLength && (pattern === null || pattern.test(text));
    };
    const formatted = typeof schema.format === 'string' ? this.formatted(schema.format) : null;
    if (formatted !== null && fits(formatted)) return formatted;
    if (pattern !== null) {
      for (let attempt = 0; attempt < 8; attempt++) {
        const candidate = sampleFromPattern(pattern.source, this.random, minLength, maxLength);
        if (candidate !== null && fits(candidate)) return candidate;
      }
    }
    if (formatted !== null) return formatted;
    return this.sized(this.text(1, 3), minLength, maxLength);
  }

  private regex(source: string): RegExp | null {
    try {
      return new RegExp(source, 'u');
    } catch {
      try {
        return new RegExp(source);
      } catch {
        return null;
      }
    }
  }

  /** Padded with more words, then cut, to fit [min, max] code points. */
  private sized(text: string, minLength: number, maxLength: number): string {
    const wanted = Math.min(minLength, SAMPLER_LIMITS.stringLength);
    const parts = [...text];
    while (parts.length < wanted) parts.push(...` ${this.word()}`);
    if (parts.length > maxLength) parts.length = Math.max(0, maxLength);
    let result = parts.join('').trimEnd();
    const length = codePoints(result);
    if (length < wanted) result += 'x'.repeat(wanted - length);
    return result;
  }

  private formatted(format: string): string | null {
    const r = this.random;
    const pad = (value: number, width = 2) => String(value).padStart(width, '0');
    const date = () => `${2000 + r.nextInt(30)}-${pad(1 + r.nextInt(12))}-${pad(1 + r.nextInt(28))}`;
    const time = () => `${pad(r.nextInt(24))}:${pad(r.nextInt(60))}:${pad(r.nextInt(60))}`;
    const hex = (length: number) =>
      Array.from({ length }, () => '0123456789abcdef'.charAt(r.nextInt(16))).join('');
    const slug = () =>
      this.word()
        .toLowerCase()
        .replace(/[^a-z0-9]/g, '') || 'sample';
    switch (format) {
      case 'date-time':
        return `${date()}T${time()}Z`;
      case 'date':
        return date();
      case 'time':
        return `${time()}Z`;
      case 'email':
        return `${slug()}@example.com`;
      case 'uri':
      case 'url':
      case 'iri':
        return `https://example.com/${slug()}`;
      case 'uuid':
        return `${hex(8)}-${hex(4)}-4${hex(3)}-${'89ab'.charAt(r.nextInt(4))}${hex(3)}-${hex(12)}`;
      case 'hostname':
        return `${slug()}.example.com`;
      case 'ipv4':
        return `192.0.2.${1 + r.nextInt(254)}`;
      case 'ipv6':
        return `2001:db8::${hex(4)}`;
      default:
        return null;
    }
  }

  private word(): string {
    return this.words[this.random.nextInt(this.words.length)] ?? 'sample';
  }

  private text(minWords: number, maxWords: number): string {
    const count = this.random.nextIntBetween(minWords, maxWords);
    return Array.from({ length: count }, () => this.word()).join(' ');
  }
}

const CLASS_DIGIT = '0123456789';
const CLASS_WORD = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_';
const CLASS_ANY = 'abcdefghijklmnopqrstuvwxyz0123456789';

type Node =
  | { kind: 'chars'; chars: string }
  | { kind: 'group'; alternatives: Node[][] }
  | { kind: 'repeat'; node: Node; min: number; max: number };

/**
 * A string matching a regular expression of the supported subset: literals, escapes (`\d \w \s \.` …),
 * `.`, character classes with ranges (`[a-z0-9_-]`, negated classes pick from letters and digits outside
 * them), groups (capturing, `(?:…)`, named), alternation and quantifiers (`? * + {n} {n,} {n,m}`, lazy
 * forms too). Lookarounds and backreferences are skipped, so the caller checks the result against the
 * real expression. null when the pattern is outside the subset.
 */
export function sampleFromPattern(
  source: string,
  random: SeededRandom,
  minLength = 0,
  maxLength = Infinity,
): string | null {
  let tree: Node[][];
  try {
    tree = new PatternParser(source).parse();
  } catch {
    return null;
  }
  const anchoredEnd = source.endsWith('$') && !source.endsWith('\\$');
  const anchoredStart = source.startsWith('^');
  let text = generate({ kind: 'group', alternatives: tree }, random);
  // An unanchored pattern matches inside a longer string; padding reaches minLength without breaking it.
  const missing = Math.min(minLength, SAMPLER_LIMITS.stringLength) - codePoints(text);
  if (missing > 0 && !anchoredEnd) text += 'x'.repeat(missing);
  else if (missing > 0 && !anchoredStart) text = `${'x'.repeat(missing)}${text}`;
  return codePoints(text) <= maxLength ? text : null;
}

function generate(node: Node, random: SeededRandom): string {
  switch (node.kind) {
    case 'chars':
      return node.chars.charAt(random.nextInt(node.chars.length));
    case 'group': {
      const alternative = node.alternatives[random.nextInt(node.alternatives.length)] ?? [];
      return alternative.map((child) => generate(child, random)).join('');
    }
    case 'repeat': {
      const max = Math.min(node.max, node.min + 4);
      const times = random.nextIntBetween(node.min, Math.max(node.min, max));
      let text = '';
      for (let i = 0; i < times && text.length <= SAMPLER_LIMITS.stringLength; i++) {
        text += generate(node.node, random);
      }
      return text;
    }
  }
}

class PatternParser {
  private position = 0;

  constructor(private readonly source: string) {}

  parse(): Node[][] {
    const alternatives = this.alternatives();
    if (this.position < this.source.length) throw new Error('unbalanced pattern');
    return alternatives;
  }

  private alternatives(): Node[][] {
    const alternatives: Node[][] = [[]];
    while (this.position < this.source.length) {
      const char = this.source.charAt(this.position);
      if (char === ')') break;
      this.position++;
      if (char === '|') {
        alternatives.push([]);
        continue;
      }
      const current = alternatives.at(-1)!;
      if (char === '^' || char === '$') continue;
      let atom: Node | null;
      if (char === '(') atom = this.group();
      else if (char === '[') atom = this.charClass();
      else if (char === '\\') atom = this.escape(false);
      else if (char === '.') atom = { kind: 'chars', chars: CLASS_ANY };
      else if ('*+?{'.includes(char) && char !== '{') throw new Error('nothing to repeat');
      else atom = { kind: 'chars', chars: char };
      if (atom === null) continue;
      current.push(this.quantified(atom));
    }
    return alternatives;
  }

  private group(): Node | null {
    let lookaround = false;
    if (this.source.startsWith('?:', this.position)) this.position += 2;
    else if (/^\?<?[=!]/.test(this.source.slice(this.position, this.position + 3))) {
      lookaround = true;
      this.position += this.source.charAt(this.position + 1) === '<' ? 3 : 2;
    } else if (this.source.startsWith('?<', this.position)) {
      this.position = this.source.indexOf('>', this.position) + 1;
      if (this.position === 0) throw new Error('bad group name');
    }
    const alternatives = this.alternatives();
    if (this.source.charAt(this.position) !== ')') throw new Error('unclosed group');
    this.position++;
    return lookaround ? null : { kind: 'group', alternatives };
  }

  private charClass(): Node {
    const negated = this.source.charAt(this.position) === '^';
    if (negated) this.position++;
    let chars = '';
    let first = true;
    while (this.position < this.source.length) {
      let char = this.source.charAt(this.position);
      if (char === ']' && !first) break;
      first = false;
      this.position++;
      if (char === '\\') {
        const escaped = this.escape(true);
        if (escaped === null || escaped.kind !== 'chars') continue;
        if (escaped.chars.length > 1) {
          chars += escaped.chars;
          continue;
        }
        char = escaped.chars;
      }
      if (this.source.charAt(this.position) === '-' && this.source.charAt(this.position + 1) !== ']') {
        this.position++;
        let end = this.source.charAt(this.position++);
        if (end === '\\')
          end = this.escape(true)?.kind === 'chars' ? this.source.charAt(this.position - 1) : end;
        const from = char.codePointAt(0) ?? 0;
        const to = end.codePointAt(0) ?? from;
        for (let code = from; code <= Math.min(to, from + 255); code++) chars += String.fromCodePoint(code);
      } else {
        chars += char;
      }
    }
    if (this.source.charAt(this.position) !== ']') throw new Error('unclosed class');
    this.position++;
    if (negated) chars = [...CLASS_WORD].filter((char) => !chars.includes(char)).join('');
    if (chars.length === 0) throw new Error('empty class');
    return { kind: 'chars', chars };
  }

  private escape(inClass: boolean): Node | null {
    const char = this.source.charAt(this.position++);
    switch (char) {
      case 'd':
        return { kind: 'chars', chars: CLASS_DIGIT };
      case 'w':
        return { kind: 'chars', chars: CLASS_WORD };
      case 's':
        return { kind: 'chars', chars: ' ' };
      case 'D':
      case 'W':
      case 'S':
        return { kind: 'chars', chars: char === 'D' ? 'abcxyz' : char === 'W' ? '-.' : 'abc' };
      case 'b':
      case 'B':
        return inClass ? { kind: 'chars', chars: '\b' } : null;
      case 'n':
        return { kind: 'chars', chars: '\n' };
      case 't':
        return { kind: 'chars', chars: '\t' };
      case 'u': {
        const hex = /^[0-9a-fA-F]{4}/.exec(this.source.slice(this.position));
        if (hex === null) return { kind: 'chars', chars: 'u' };
        this.position += 4;
        return { kind: 'chars', chars: String.fromCharCode(parseInt(hex[0], 16)) };
      }
      case 'x': {
        const hex = /^[0-9a-fA-F]{2}/.exec(this.source.slice(this.position));
        if (hex === null) return { kind: 'chars', chars: 'x' };
        this.position += 2;
        return { kind: 'chars', chars: String.fromCharCode(parseInt(hex[0], 16)) };
      }
      default:
        if (/[1-9]/.test(char) && !inClass) throw new Error('backreference');
        return { kind: 'chars', chars: char };
    }
  }

  private quantified(atom: Node): Node {
    const char = this.source.charAt(this.position);
    let min: number;
    let max: number;
    if (char === '?' || char === '*' || char === '+') {
      this.position++;
      [min, max] = char === '?' ? [0, 1] : char === '*' ? [0, Infinity] : [1, Infinity];
    } else if (char === '{') {
      const match = /^\{(\d+)(,(\d*))?\}/.exec(this.source.slice(this.position));
      if (match === null) return atom;
      this.position += match[0].length;
      min = Number(match[1]);
      max = match[2] === undefined ? min : match[3] === '' ? Infinity : Number(match[3]);
    } else {
      return atom;
    }
    if (this.source.charAt(this.position) === '?') this.position++;
    return { kind: 'repeat', node: atom, min, max };
  }
}
