import { GatewayError } from '../errors/gateway-error';
import { embeddingInputsOf, validateEmbeddingBody } from './embedding-request.schema';

const refusal = (body: object): { param: string | null; status: number } => {
  try {
    validateEmbeddingBody({ model: 'e', ...body });
  } catch (error) {
    if (error instanceof GatewayError) return { param: error.param, status: error.status };
    throw error;
  }
  throw new Error('accepted');
};

describe('validateEmbeddingBody', () => {
  it.each([
    ['a string', 'hello', ['hello']],
    ['strings', ['a', 'b'], ['a', 'b']],
    ['token ids', [1, 2, 3], [[1, 2, 3]]],
    ['arrays of token ids', [[1], [2, 3]], [[1], [2, 3]]],
  ])('accepts %s as input', (_what, input, inputs) => {
    const body = validateEmbeddingBody({
      model: 'e',
      input,
      encoding_format: 'base64',
      dimensions: 8,
    });
    expect(embeddingInputsOf(body.input)).toEqual(inputs);
  });

  it.each([
    [{ input: '' }, 'input'],
    [{ input: [] }, 'input'],
    [{ input: ['a', 3] }, 'input[1]'],
    [{ input: [[1], 'a'] }, 'input[1]'],
    [{ input: [1, -1] }, 'input[1]'],
    [{ input: { text: 'a' } }, 'input'],
    [{ input: Array.from({ length: 2049 }, () => 'a') }, 'input'],
    [{}, 'input'],
    [{ input: 'a', dimensions: 0 }, 'dimensions'],
    [{ input: 'a', encoding_format: 'hex' }, 'encoding_format'],
    [{ input: 'a', extra: true }, 'extra'],
  ])('refuses %j with a 400 naming its parameter', (body, param) => {
    expect(refusal(body)).toEqual({ status: 400, param });
  });
});
