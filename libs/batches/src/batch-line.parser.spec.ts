import { GatewayError } from '@mgw/contracts';
import { parseBatchLine, type BodyCheck } from './batch-line.parser';

describe('parseBatchLine', () => {
  const accept: BodyCheck = () => undefined;
  const line = (value: unknown) => JSON.stringify(value);
  const good = {
    custom_id: 'a',
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model: 'm', messages: [] },
  };

  it('accepts a well-formed line', () => {
    expect(parseBatchLine(line(good), 1, '/v1/chat/completions', accept)).toEqual({
      ok: true,
      line: good,
    });
  });

  it.each([
    ['not JSON', '{"custom_id": ', 'invalid_json_line', null],
    ['not an object', '[1,2]', 'invalid_json_line', null],
    ['no custom_id', line({ ...good, custom_id: undefined }), 'missing_required_parameter', 'custom_id'],
    ['a GET', line({ ...good, method: 'GET' }), 'invalid_method', 'method'],
    ['another endpoint', line({ ...good, url: '/v1/embeddings' }), 'invalid_url', 'url'],
    ['no body', line({ ...good, body: 'x' }), 'missing_required_parameter', 'body'],
    ['a stream', line({ ...good, body: { ...good.body, stream: true } }), 'invalid_value', 'body.stream'],
  ])('refuses %s', (_name, raw, code, param) => {
    expect(parseBatchLine(raw, 7, '/v1/chat/completions', accept)).toEqual({
      ok: false,
      error: expect.objectContaining({ code, param, line: 7 }) as unknown,
    });
  });

  it("reports the front-end's refusal of the body, its param under body", () => {
    const refuse: BodyCheck = () => {
      throw GatewayError.invalidRequest("'messages' must be an array", 'messages', 'invalid_type');
    };
    expect(parseBatchLine(line(good), 3, '/v1/chat/completions', refuse)).toEqual({
      ok: false,
      error: {
        code: 'invalid_type',
        message: "'messages' must be an array",
        param: 'body.messages',
        line: 3,
      },
    });
  });

  it('lets a bug in the check through instead of calling it a bad line', () => {
    const broken: BodyCheck = () => {
      throw new TypeError('boom');
    };
    expect(() => parseBatchLine(line(good), 1, '/v1/chat/completions', broken)).toThrow(TypeError);
  });
});
