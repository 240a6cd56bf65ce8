import { errorOf } from './api.client';

describe('errorOf', () => {
  it('reads the OpenAI error shape and describes it as status, code and message', () => {
    const error = errorOf(401, {
      error: {
        message: 'Incorrect API key provided.',
        type: 'invalid_request_error',
        code: 'invalid_api_key',
      },
    });
    expect(error?.describe()).toBe('401 invalid_api_key: Incorrect API key provided.');
  });

  it('falls back to the type without a code, and is null for anything else', () => {
    expect(errorOf(502, { error: { message: 'x', type: 'server_error', code: null } })?.describe()).toBe(
      '502 server_error: x',
    );
    expect(errorOf(200, { choices: [] })).toBeNull();
    expect(errorOf(200, null)).toBeNull();
  });
});
