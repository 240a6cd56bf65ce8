import { typed, type FromSchema, type SameShape } from './from-schema';
import { NO_RESPONSE_SCHEMA_DRIFT, RESPONSE_SCHEMAS } from './response.schemas';

interface Refs {
  Usage: { tokens: number };
}

const answer = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    kind: { enum: ['a', 'b'] },
    object: { const: 'answer' },
    note: { type: ['string', 'null'] },
    usage: { $ref: '#/components/schemas/Usage' },
    tags: { type: 'array', items: { type: 'string' } },
    metadata: { type: 'object', additionalProperties: { type: 'string' } },
  },
  required: ['id', 'kind', 'object', 'note', 'tags', 'metadata'],
} as const;

interface Answer {
  id: string;
  kind: 'a' | 'b';
  object: 'answer';
  note: string | null;
  usage?: { tokens: number };
  tags: string[];
  metadata: Record<string, string>;
}

// Each line compiles only if the check says what its comment says: `tsc` (npm run lint) is the test.
const agrees: SameShape<FromSchema<typeof answer, Refs>, Answer> = true;
// @ts-expect-error a field of another type
const otherType: SameShape<FromSchema<typeof answer, Refs>, Answer & { id: number }> = true;
// @ts-expect-error a field the schema lacks, even an optional one
const optionalMissing: SameShape<FromSchema<typeof answer, Refs>, Answer & { extra?: string }> = true;
// @ts-expect-error nullable on one side only
const nullable: SameShape<FromSchema<typeof answer, Refs>, Omit<Answer, 'note'> & { note: string }> = true;
// @ts-expect-error optional on one side only
const optional: SameShape<
  FromSchema<typeof answer, Refs>,
  Omit<Answer, 'usage'> & { usage: Refs['Usage'] }
> = true;
const carried: SameShape<FromSchema<ReturnType<ReturnType<typeof typed<Date>>>, Refs>, Date> = true;

describe('FromSchema and the response schemas', () => {
  it('reads a schema back as its type, and tells a drift from agreement', () => {
    expect([agrees, otherType, optionalMissing, nullable, optional, carried]).toEqual(Array(6).fill(true));
    expect(answer.required).not.toContain('usage');
  });

  it('finds no drift between the response schemas and the types the handlers return', () => {
    expect(NO_RESPONSE_SCHEMA_DRIFT).toBe(true);
    expect(Object.keys(RESPONSE_SCHEMAS)).toContain('ChatCompletionChunk');
  });

  it('leaves a typed() schema as it is', () => {
    const schema = { type: 'object' } as const;
    expect(typed<Date>()(schema)).toBe(schema);
  });
});
