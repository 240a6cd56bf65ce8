import { expectRejectedParam } from '@mgw/testing';
import { GatewayError } from '../errors/gateway-error';
import {
  IMAGE_GENERATION_BODY,
  IMAGE_SIZES,
  parseImageSize,
  validateImageGenerationBody,
  type ImageGenerationBody,
} from './image-generation-request.schema';
import { openApiSchemaOf } from '../validation/wire-schema';

function validate(body: unknown): ImageGenerationBody {
  return validateImageGenerationBody(body);
}

const withField = (field: string, value: unknown): Record<string, unknown> => ({
  prompt: 'a cat',
  [field]: value,
});

const expectRejected = (body: unknown, param: string): GatewayError =>
  expectRejectedParam(validate, body, param);

describe('validateImageGenerationBody', () => {
  it('accepts a minimal request', () => {
    expect(validate({ prompt: 'a cat' })).toEqual({ prompt: 'a cat' });
  });

  describe('prompt', () => {
    it('accepts 4000 characters', () => {
      expect(validate({ prompt: 'p'.repeat(4000) }).prompt).toHaveLength(4000);
    });

    it('rejects 4001 characters', () => {
      const error = expectRejected({ prompt: 'p'.repeat(4001) }, 'prompt');
      expect(error.message).toContain('at most 4000 characters');
      expect(error.message).toContain('length 4001');
    });

    it('rejects an empty prompt', () => {
      expect(expectRejected({ prompt: '' }, 'prompt').message).toContain('expected a non-empty prompt');
    });

    it('rejects a missing prompt', () => {
      expect(expectRejected({ n: 1 }, 'prompt').message).toContain('expected a string');
    });

    it('rejects a non-string prompt', () => {
      expect(expectRejected({ prompt: 5 }, 'prompt').message).toContain('expected a string, got 5');
    });
  });

  describe('n', () => {
    it.each([1, 10])('accepts n=%p', (n) => {
      expect(validate(withField('n', n)).n).toBe(n);
    });

    it.each([0, 11, 2.5, '2'])('rejects n=%p', (n) => {
      expect(expectRejected(withField('n', n), 'n').message).toContain(
        'expected an integer between 1 and 10',
      );
    });
  });

  describe('size', () => {
    it('lists exactly the five spec sizes', () => {
      expect([...IMAGE_SIZES].sort()).toEqual(['1024x1024', '1024x1792', '1792x1024', '256x256', '512x512']);
    });

    it.each([...IMAGE_SIZES])('accepts %s', (size) => {
      expect(validate(withField('size', size)).size).toBe(size);
    });

    it.each(['1024x1025', '1024X1024', '', 1024])('rejects %p', (size) => {
      expect(expectRejected(withField('size', size), 'size').message).toContain('expected one of 256x256');
    });

    it('parses sizes into width and height', () => {
      expect(parseImageSize('1792x1024')).toEqual({ width: 1792, height: 1024 });
      expect(parseImageSize('256x256')).toEqual({ width: 256, height: 256 });
    });
  });

  describe('response_format', () => {
    it('accepts b64_json', () => {
      expect(validate(withField('response_format', 'b64_json')).response_format).toBe('b64_json');
    });

    it('rejects url', () => {
      const error = expectRejected(withField('response_format', 'url'), 'response_format');
      expect(error.message).toContain('"url"');
      expect(error.message).toContain('b64_json');
    });
  });

  it('accepts a user string', () => {
    expect(validate(withField('user', 'user-1')).user).toBe('user-1');
  });

  it.each(['user', 'model'])('accepts a %s of 256 characters and rejects 257', (field) => {
    expect(validate(withField(field, 'u'.repeat(256)))[field as 'user' | 'model']).toBe('u'.repeat(256));
    expect(expectRejected(withField(field, 'u'.repeat(257)), field).message).toContain(
      'at most 256 characters',
    );
  });

  it('rejects an empty model id', () => {
    expectRejected(withField('model', ''), 'model');
  });

  it('rejects a user that is not a string', () => {
    expectRejected(withField('user', 1), 'user');
  });

  it('rejects an unknown field', () => {
    expect(expectRejected(withField('quality', 'hd'), 'quality').message).toBe(
      'Unrecognized request argument supplied: quality',
    );
  });

  it.each(['model', 'n', 'size', 'response_format', 'user'])('accepts null for optional %s', (field) => {
    expect(() => validate(withField(field, null))).not.toThrow();
  });

  it.each([[[]], ['a cat'], [null]])('rejects a non-object body %p', (body) => {
    try {
      validate(body);
      throw new Error('not rejected');
    } catch (error) {
      expect(error).toBeInstanceOf(GatewayError);
      if (error instanceof GatewayError) {
        expect(error.status).toBe(400);
        expect(error.message).toContain('must be a JSON object');
      }
    }
  });

  it("documents the spec's image bounds", () => {
    const schema = openApiSchemaOf(IMAGE_GENERATION_BODY) as {
      properties: Record<string, { anyOf?: object[] }>;
      required: string[];
    };
    // An optional field is documented as its value or null: its value's schema is the first branch.
    const prop = (name: string): object => schema.properties[name]!.anyOf?.[0] ?? schema.properties[name]!;
    expect(prop('prompt')).toMatchObject({ type: 'string', maxLength: 4000 });
    expect(prop('n')).toMatchObject({ type: 'integer', minimum: 1, maximum: 10 });
    expect(prop('size')).toMatchObject({
      enum: ['256x256', '512x512', '1024x1024', '1792x1024', '1024x1792'],
    });
    expect(prop('response_format')).toMatchObject({ enum: ['b64_json'] });
    expect(schema.required).toEqual(['prompt']);
  });
});
