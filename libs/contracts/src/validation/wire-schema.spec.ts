import { z } from 'zod';
import { openApiSchemaOf, valueAt, WireSchema } from './wire-schema';

const PART = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text'), text: z.string() }),
  z.looseObject({ type: z.literal('image'), url: z.string() }),
]);
const BODY = z.strictObject({
  model: z.string(),
  content: z.union([z.string(), z.array(PART).max(3)]),
  temperature: z.number().min(0).max(2).nullish(),
});
const schema = new WireSchema(BODY);

describe('WireSchema', () => {
  it.each([
    { model: 'm', content: 'x' },
    {
      model: 'm',
      content: [
        { type: 'text', text: 'a' },
        { type: 'image', url: 'u', extra: 1 },
      ],
      temperature: null,
    },
  ])('takes %j', (body) => {
    expect(schema.issueOf(body)).toBeNull();
  });

  it.each([
    [{ model: 'm', content: 'x', zz: 1, temperature: 9 }, ['zz'], 'unrecognized_keys'],
    [{ model: 1, content: 'x' }, ['model'], 'invalid_type'],
    [
      { model: 'm', content: [{ type: 'text', text: 'a' }, { type: 'audio' }] },
      ['content', 1, 'type'],
      'invalid_union',
    ],
    [{ model: 'm', content: [{ type: 'image' }] }, ['content', 0, 'url'], 'invalid_type'],
    [{ model: 'm', content: Array(4).fill({ type: 'text', text: 'a' }) }, ['content'], 'too_big'],
    [{ model: 'm', content: 5 }, ['content'], 'invalid_union'],
    [{ model: 'm', content: 'x', temperature: 3 }, ['temperature'], 'too_big'],
  ])('refuses %j at %j', (body, path, code) => {
    expect(schema.issueOf(body)).toMatchObject({ path, code });
  });

  it('checks a non-empty string as zod does, a lone astral character and a lone surrogate included', () => {
    const texts = new WireSchema(z.array(z.string().min(1)));
    for (const text of ['a', '😀', '\ud83d', ' ']) expect(texts.passes([text])).toBe(true);
    expect(texts.passes(['a', ''])).toBe(false);
    expect(texts.issueOf([''])).toMatchObject({ path: [0], code: 'too_small' });
    // Bounds above one still count code points, as zod and the API's words do.
    const short = new WireSchema(z.string().min(2).max(3));
    expect([short.passes('😀'), short.passes('😀😀'), short.passes('😀😀😀😀')]).toEqual([
      false,
      true,
      false,
    ]);
  });

  it('describes the body as JSON Schema 2020-12 without the draft, for the API document', () => {
    const document = openApiSchemaOf(BODY);
    expect(document.$schema).toBeUndefined();
    expect(document).toMatchObject({
      type: 'object',
      required: ['model', 'content'],
      additionalProperties: false,
    });
  });

  it('reads the value at a path, undefined where the path leaves the body', () => {
    expect(valueAt({ a: [{ b: 1 }] }, ['a', 0, 'b'])).toBe(1);
    expect(valueAt({ a: 1 }, ['a', 'b'])).toBeUndefined();
  });
});
