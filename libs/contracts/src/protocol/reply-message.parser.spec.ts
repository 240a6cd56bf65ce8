import { parseReplyMessage } from './reply-message.parser';
import { ProtocolError } from './protocol.error';
import type { ReplyMessage } from './reply-message.types';
import { raw, requestId, valid } from './reply-message.fixtures';

function withFields(kind: ReplyMessage['kind'], fields: Record<string, unknown>): string {
  return raw({ ...valid[kind], ...fields });
}
function expectProtocolError(text: string, reason?: string): void {
  let caught: unknown;
  try {
    parseReplyMessage(text);
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ProtocolError);
  if (caught instanceof ProtocolError) {
    expect(caught.message).toMatch(/^Malformed reply message: /);
    if (reason !== undefined) expect(caught.message).toContain(reason);
  }
}

describe('parseReplyMessage', () => {
  it.each(Object.keys(valid) as ReplyMessage['kind'][])('accepts a valid %s message', (kind) => {
    expect(parseReplyMessage(raw(valid[kind]))).toEqual(valid[kind]);
  });

  it('accepts an error message with string code and param', () => {
    const error = { status: 400, type: 'invalid_request_error', code: 'bad', message: 'no', param: 'stop' };
    expect(parseReplyMessage(withFields('error', { error }))).toEqual({ ...valid.error, error });
  });

  it('accepts an empty delta and an empty finishReasons list', () => {
    expect(parseReplyMessage(withFields('delta', { content: '' }))).toMatchObject({ content: '' });
    expect(parseReplyMessage(withFields('chat-done', { finishReasons: [] }))).toMatchObject({
      finishReasons: [],
    });
  });

  it('drops fields that are not part of the message', () => {
    expect(parseReplyMessage(withFields('image-done', { extra: 'x' }))).toEqual(valid['image-done']);
  });

  it.each(['not json', '{"requestId":', '', 'undefined'])('rejects non-JSON %p', (text) => {
    expectProtocolError(text, 'not JSON');
  });

  it.each(['null', '"started"', '42', '[42]'])('rejects a JSON value that is not an object: %s', (text) => {
    expectProtocolError(text, 'message must be an object');
  });

  it('rejects an empty frame, and a frame of several where one message was expected', () => {
    expectProtocolError('[]', 'a frame holds 1 to');
    expectProtocolError(`[${raw(valid.started)},${raw(valid.delta)}]`, 'expected one message');
  });

  it('rejects a missing requestId', () => {
    const { requestId: _omit, ...rest } = valid.started;
    expectProtocolError(raw(rest), "'requestId' must be a string");
  });

  it('rejects a non-string requestId', () => {
    expectProtocolError(withFields('started', { requestId: 12345678 }), "'requestId' must be a string");
  });

  it.each([-1, 1.5, '0', null, Number.MAX_SAFE_INTEGER + 2])('rejects seq %p', (seq) => {
    expectProtocolError(withFields('delta', { seq }), "'seq' must be a non-negative integer");
  });

  it('rejects a missing seq', () => {
    const { seq: _omit, ...rest } = valid.delta;
    expectProtocolError(raw(rest), "'seq'");
  });

  it.each(['finished', 'Delta', null, undefined])('rejects unknown kind %p', (kind) => {
    expectProtocolError(withFields('delta', { kind }), 'unknown kind');
  });

  it('rejects a started message without workerId', () => {
    expectProtocolError(withFields('started', { workerId: 1 }), "'workerId'");
  });

  it.each([
    ['a negative choice', { choice: -1 }, "'choice'"],
    ['a non-string content', { content: 5 }, "'content'"],
  ])('rejects a delta with %s', (_label, fields, reason) => {
    expectProtocolError(withFields('delta', fields), reason);
  });

  it.each([
    ['an unknown reason', ['stop', 'eos']],
    ['a null reason', [null]],
    ['a string instead of an array', 'stop'],
    ['a missing list', undefined],
  ])('rejects chat-done with %s in finishReasons', (_label, finishReasons) => {
    expectProtocolError(withFields('chat-done', { finishReasons }), "'finishReasons'");
  });

  it.each([
    ['missing usage', undefined, "'usage' must be an object"],
    ['usage as an array', [1, 2], "'usage' must be an object"],
    ['a negative prompt_tokens', { prompt_tokens: -1, completion_tokens: 1 }, "'prompt_tokens'"],
    ['a missing completion_tokens', { prompt_tokens: 1 }, "'completion_tokens'"],
  ])('rejects chat-done with %s', (_label, usage, reason) => {
    expectProtocolError(withFields('chat-done', { usage }), reason);
  });

  it.each([
    ['index', { index: 0.5 }],
    ['key', { key: null }],
    ['revisedPrompt', { revisedPrompt: undefined }],
  ])('rejects an image message with a bad %s', (field, fields) => {
    expectProtocolError(withFields('image', fields), `'${field}'`);
  });

  it('rejects image-done with a negative count', () => {
    expectProtocolError(withFields('image-done', { count: -2 }), "'count'");
  });

  it.each([200, 399, 600, 0])('rejects an error with status %p', (status) => {
    const error = { status, type: 'server_error', code: null, message: 'x', param: null };
    expectProtocolError(withFields('error', { error }), "'error.status' must be an HTTP error status");
  });

  it.each([400, 599])('accepts an error with status %p', (status) => {
    const error = { status, type: 'server_error', code: null, message: 'x', param: null };
    expect(parseReplyMessage(withFields('error', { error }))).toMatchObject({ error: { status } });
  });

  it('keeps a retryAfter hint and rejects a bad one', () => {
    const error = { status: 429, type: 'rate_limit_error', code: null, message: 'x', param: null };
    expect(parseReplyMessage(withFields('error', { error: { ...error, retryAfter: 7 } }))).toMatchObject({
      error: { retryAfter: 7 },
    });
    expectProtocolError(withFields('error', { error: { ...error, retryAfter: -1 } }), "'retryAfter'");
    expectProtocolError(withFields('error', { error: { ...error, retryAfter: '7' } }), "'retryAfter'");
  });

  it('rejects an error with a non-string type', () => {
    const error = { status: 500, type: 5, code: null, message: 'x', param: null };
    expectProtocolError(withFields('error', { error }), "'type' must be a string");
  });

  it.each(['fatal_error', 'Server_Error', ''])('rejects an error with type %p', (type) => {
    const error = { status: 500, type, code: null, message: 'x', param: null };
    expectProtocolError(withFields('error', { error }), "'error.type' is not a known error type");
  });

  it.each([
    ['a missing error object', undefined, "'error' must be an object"],
    [
      'a non-string message',
      { status: 500, type: 'server_error', code: null, message: 1, param: null },
      "'message'",
    ],
    ['a numeric code', { status: 500, type: 'server_error', code: 1, message: 'x', param: null }, "'code'"],
    ['a missing param', { status: 500, type: 'server_error', code: null, message: 'x' }, "'param'"],
  ])('rejects an error message with %s', (_label, error, reason) => {
    expectProtocolError(withFields('error', { error }), reason);
  });
});

describe('parseReplyMessage: tool calls and logprobs', () => {
  const token = (text: string, logprob: number, top: unknown[] = []) => ({
    token: text,
    logprob,
    bytes: [...Buffer.from(text)],
    top_logprobs: top,
  });

  it('reads a delta with logprobs, alternatives and null bytes', () => {
    const logprobs = [
      token('He', -0.25, [
        { token: 'He', logprob: -0.25, bytes: [72, 101] },
        { token: 'She', logprob: -1.5, bytes: null },
      ]),
      token(' said', 0),
    ];
    expect(parseReplyMessage(withFields('delta', { logprobs }))).toEqual({ ...valid.delta, logprobs });
  });

  it('leaves a delta without logprobs without the field', () => {
    expect(parseReplyMessage(raw(valid.delta))).not.toHaveProperty('logprobs');
  });

  it.each([
    ['not an array', { token: 'a' }, "'logprobs' must be an array"],
    ['too many tokens', Array.from({ length: 4097 }, () => token('a', -1)), "'logprobs' must be an array"],
    ['a positive logprob', [token('a', 0.5)], "'logprobs[0]'.logprob must be a finite number ≤ 0"],
    ['a NaN-like logprob', [{ ...token('a', -1), logprob: null }], "'logprobs[0]'.logprob"],
    ['a string logprob', [{ ...token('a', -1), logprob: '-1' }], "'logprobs[0]'.logprob"],
    ['a huge token', [token('x'.repeat(1025), -1)], "'logprobs[0]'.token"],
    ['a byte above 255', [{ ...token('a', -1), bytes: [256] }], "'logprobs[0]'.bytes"],
    ['a fractional byte', [{ ...token('a', -1), bytes: [1.5] }], "'logprobs[0]'.bytes"],
    ['a negative byte', [{ ...token('a', -1), bytes: [-1] }], "'logprobs[0]'.bytes"],
    ['bytes as a string', [{ ...token('a', -1), bytes: 'YQ==' }], "'logprobs[0]'.bytes"],
    ['missing top_logprobs', [{ token: 'a', logprob: -1, bytes: null }], 'top_logprobs must be an array'],
    [
      '21 alternatives',
      [
        token(
          'a',
          -1,
          Array.from({ length: 21 }, () => ({ token: 'a', logprob: -1, bytes: null })),
        ),
      ],
      'top_logprobs must be an array of at most 20',
    ],
    [
      'a bad alternative',
      [token('a', -1, [{ token: 'b', logprob: 1, bytes: null }])],
      "'logprobs[0]'.top_logprobs[0].logprob",
    ],
    ['a token that is not an object', ['a'], "'logprobs[0]' must be an object"],
  ])('rejects a delta whose logprobs have %s', (_label, logprobs, reason) => {
    expectProtocolError(withFields('delta', { logprobs }), reason);
  });

  it('rejects a logprob that JSON reads as -Infinity (-1e999)', () => {
    const text = withFields('delta', { logprobs: [token('a', -1)] }).replace(
      '"logprob":-1',
      '"logprob":-1e999',
    );
    expectProtocolError(text, 'finite');
  });

  it('reads a later piece of a tool call without id and name', () => {
    const piece = { requestId, seq: 3, kind: 'tool-call', choice: 1, index: 2, arguments: '"Paris"}' };
    expect(parseReplyMessage(raw(piece))).toEqual(piece);
  });

  it('reads a first piece with empty arguments', () => {
    expect(parseReplyMessage(withFields('tool-call', { arguments: '' }))).toMatchObject({
      id: 'call_0123456789',
      name: 'get_weather',
      arguments: '',
    });
  });

  it.each([
    ['a negative choice', { choice: -1 }, "'choice'"],
    ['a fractional index', { index: 0.5 }, "'index'"],
    ['missing arguments', { arguments: undefined }, "'arguments'"],
    ['object arguments', { arguments: { city: 'Paris' } }, "'arguments'"],
    ['an id without a name', { name: undefined }, "'name' must be a string"],
    ['a name without an id', { id: undefined }, "'id' must be a string"],
    ['an empty id', { id: '' }, "'id' must be 1 to 256 characters"],
    ['a huge id', { id: 'c'.repeat(257) }, "'id' must be 1 to 256 characters"],
    ['a name with a space', { name: 'get weather' }, "'name' must match"],
    ['a name with a dot', { name: 'weather.get' }, "'name' must match"],
    ['a 65-character name', { name: 'n'.repeat(65) }, "'name' must match"],
    ['an empty name', { name: '' }, "'name' must match"],
  ])('rejects a tool call with %s', (_label, fields, reason) => {
    expectProtocolError(withFields('tool-call', fields), reason);
  });

  it.each(['stop', 'length', 'tool_calls', 'content_filter'])('keeps finish reason %s', (reason) => {
    expect(parseReplyMessage(withFields('chat-done', { finishReasons: [reason] }))).toMatchObject({
      finishReasons: [reason],
    });
  });
});
