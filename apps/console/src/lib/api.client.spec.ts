import { ApiError, errorOf, withListenerHint } from './api.client';

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

describe('withListenerHint', () => {
  const unknownUrl = (path: string) =>
    new ApiError(404, `Unknown request URL: GET ${path}.`, 'unknown_url', 'invalid_request_error');

  it('names the operator listener when the admin API is not on this port', () => {
    expect(withListenerHint('/admin/keys', unknownUrl('/admin/keys')).message).toContain('ADMIN_PORT');
  });

  it('names the API port when the API is not on this port', () => {
    expect(withListenerHint('/v1/models', unknownUrl('/v1/models')).message).toContain('API port');
  });

  it('leaves every other error as it is', () => {
    const missing = new ApiError(404, 'No such key.', 'key_not_found', 'invalid_request_error');
    expect(withListenerHint('/admin/keys/k1', missing)).toBe(missing);
    const elsewhere = unknownUrl('/nowhere');
    expect(withListenerHint('/nowhere', elsewhere)).toBe(elsewhere);
  });
});
