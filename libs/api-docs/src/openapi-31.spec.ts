import { nullableTo31 } from './openapi-31';

describe('nullableTo31', () => {
  it('adds null to a single type, and to its enum', () => {
    expect(nullableTo31({ type: 'number', nullable: true, description: 'd' })).toEqual({
      type: ['number', 'null'],
      description: 'd',
    });
    expect(nullableTo31({ type: 'string', enum: ['a'], nullable: true })).toEqual({
      type: ['string', 'null'],
      enum: ['a', null],
    });
  });

  it('wraps a reference or a composition in anyOf with null, keeping the description outside', () => {
    expect(nullableTo31({ $ref: '#/components/schemas/X', nullable: true, description: 'd' })).toEqual({
      anyOf: [{ $ref: '#/components/schemas/X' }, { type: 'null' }],
      description: 'd',
    });
  });

  it('drops nullable: false, reaches nested schemas, and leaves examples and literals alone', () => {
    const schema = {
      type: 'object',
      nullable: false,
      properties: {
        rate: { type: 'number', nullable: true },
        items: { type: 'array', items: { type: 'integer', nullable: true } },
        nullable: { type: 'boolean' },
      },
      example: { rate: null, nullable: true },
    };
    expect(nullableTo31(schema)).toEqual({
      type: 'object',
      properties: {
        rate: { type: ['number', 'null'] },
        items: { type: 'array', items: { type: ['integer', 'null'] } },
        nullable: { type: 'boolean' },
      },
      example: { rate: null, nullable: true },
    });
  });
});
