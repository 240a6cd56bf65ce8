import { GatewayError, validateImageGenerationBody } from '@mgw/contracts';
import { imageRequestOfBody } from './image-request';
import { jobRequestFields, readImageJob } from './job-data';

const envelope = { requestId: 'req_0123456789', model: 'i', replyTo: 'r', deadline: 1, enqueuedAt: 0 };

describe('ImageRequest', () => {
  it("is made of a body with the spec's defaults applied", () => {
    expect(imageRequestOfBody(validateImageGenerationBody({ prompt: 'a cat' }))).toEqual({
      prompt: 'a cat',
      n: 1,
      size: '1024x1024',
      user: null,
    });
    const body = {
      prompt: 'a cat',
      n: 3,
      size: '256x256',
      user: 'u',
      model: null,
      response_format: 'b64_json',
    };
    expect(imageRequestOfBody(validateImageGenerationBody(body))).toEqual({
      prompt: 'a cat',
      n: 3,
      size: '256x256',
      user: 'u',
    });
  });

  it('is written in a job as a body the HTTP edge itself takes, as version 1', () => {
    const request = { prompt: 'a cat', n: 2, size: '512x512' as const, user: 'u' };
    const fields = jobRequestFields('image', request, 'sim-image', false);
    expect(fields).toEqual({ v: 1, request: { prompt: 'a cat', n: 2, size: '512x512', user: 'u' } });
    // What a worker of the release before reads: a strict `POST /v1/images/generations` body.
    expect(() => validateImageGenerationBody(fields.request)).not.toThrow();
    expect(readImageJob({ ...envelope, ...fields }).request).toEqual(request);
  });

  it('reads the job of a gateway of the release before (the client body as sent), ignoring newer fields', () => {
    const job = readImageJob({
      ...envelope,
      future: 1,
      request: { prompt: 'a cat', model: 'i', response_format: null, size: null, future: 1 },
    });
    expect(job.request).toEqual({ prompt: 'a cat', n: 1, size: '1024x1024', user: null });
    expect(job.v).toBe(1);
  });

  it.each([
    [{ prompt: '' }, 'request.prompt'],
    [{ prompt: 'a', n: 11 }, 'request.n'],
    [{ prompt: 'a', size: '1x1' }, 'request.size'],
    [{ n: 1 }, 'request.prompt'],
  ])('refuses a job whose request %j breaks the rules of the HTTP edge, naming %s', (request, param) => {
    let refusal: unknown = null;
    try {
      readImageJob({ ...envelope, request });
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(GatewayError);
    expect((refusal as GatewayError).param).toBe(param);
    expect((refusal as GatewayError).message).toContain(`Invalid '${param}': expected `);
  });
});
