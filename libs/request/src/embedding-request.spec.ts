import { GatewayError, validateEmbeddingBody } from '@mgw/contracts';
import { embeddingBodyOf, embeddingRequestOfBody, readEmbeddingRequest } from './embedding-request';
import { jobRequestFields, readEmbeddingJob } from './job-data';

const envelope = { requestId: 'req_0123456789', model: 'e', replyTo: 'r', deadline: 1, enqueuedAt: 0 };

const refusalOf = (read: () => unknown): GatewayError => {
  try {
    read();
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('accepted');
};

describe('EmbeddingRequest', () => {
  it.each([
    ['a string', 'hello', ['hello']],
    ['strings', ['a', 'b'], ['a', 'b']],
    ['token ids', [1, 2, 3], [[1, 2, 3]]],
    ['arrays of token ids', [[1], [2, 3]], [[1], [2, 3]]],
  ])('is made of a body with %s as input: one input per vector', (_what, input, inputs) => {
    const body = validateEmbeddingBody({ model: 'e', input, encoding_format: 'base64' });
    expect(embeddingRequestOfBody(body)).toEqual({ inputs, dimensions: null, user: null });
    expect(
      embeddingRequestOfBody(validateEmbeddingBody({ model: 'e', input, dimensions: 8, user: 'u' })),
    ).toEqual({ inputs, dimensions: 8, user: 'u' });
  });

  it('is written in a job as a body the HTTP edge itself takes, under the version embedding jobs have', () => {
    const request = { inputs: [[1], [2, 3]], dimensions: 8, user: null };
    const fields = jobRequestFields('embedding', request, 'sim-embed', false);
    expect(fields).toEqual({ v: 2, request: { model: 'sim-embed', input: [[1], [2, 3]], dimensions: 8 } });
    // What a worker of the release before reads: a strict `POST /v1/embeddings` body.
    expect(() => validateEmbeddingBody(fields.request)).not.toThrow();
    expect(readEmbeddingJob({ ...envelope, ...fields }).request).toEqual(request);
  });

  it('reads the job of a gateway of the release before: the client body as sent', () => {
    const job = readEmbeddingJob({
      ...envelope,
      v: 2,
      request: { model: 'e', input: 'hello', encoding_format: 'base64', user: null, dimensions: null },
    });
    expect(job.request).toEqual({ inputs: ['hello'], dimensions: null, user: null });
    expect(job.v).toBe(2);
  });

  it('ignores fields a newer gateway adds, in the job and in its request', () => {
    const job = readEmbeddingJob({
      ...envelope,
      future: 1,
      request: { model: 'e', input: ['a'], future: 1 },
    });
    expect(job.request).toEqual({ inputs: ['a'], dimensions: null, user: null });
    expect(job).not.toHaveProperty('future');
  });

  it.each([
    [{ model: 'e', input: [''] }, 'request.input[0]'],
    [{ model: 'e', input: [1, -1] }, 'request.input[1]'],
    [{ model: 'e' }, 'request.input'],
    [{ model: '', input: 'a' }, 'request.model'],
    [{ model: 'e', input: 'a', dimensions: 0 }, 'request.dimensions'],
  ])('refuses a job whose request %j breaks the rules of the HTTP edge, naming %s', (request, param) => {
    const refusal = refusalOf(() => readEmbeddingJob({ ...envelope, request }));
    expect({ status: refusal.status, param: refusal.param }).toEqual({ status: 400, param });
    expect(refusal.message).toContain(`'${param}'`);
  });

  it('refuses a job without a request object', () => {
    expect(() => readEmbeddingJob({ ...envelope, request: 'x' })).toThrow(GatewayError);
    expect(refusalOf(() => readEmbeddingRequest([])).param).toBe('request');
  });

  it('spells each request as a body of the same inputs', () => {
    expect(embeddingBodyOf({ inputs: ['a', 'b'], dimensions: null, user: 'u' }, 'm')).toEqual({
      model: 'm',
      input: ['a', 'b'],
      user: 'u',
    });
  });
});
