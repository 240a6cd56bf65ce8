import { parseCancelMessage, parseControlMessage } from './control-message';
import { ProtocolError } from './protocol.error';
import { raw, requestId } from './reply-message.fixtures';

describe('parseCancelMessage', () => {
  it.each(['client_disconnected', 'deadline_exceeded', 'gateway_shutdown', 'protocol_error'])(
    'accepts reason %s',
    (reason) => {
      expect(parseCancelMessage(raw({ requestId, reason }))).toEqual({ requestId, reason });
    },
  );

  it('drops unknown fields', () => {
    expect(parseCancelMessage(raw({ requestId, reason: 'gateway_shutdown', x: 1 }))).toEqual({
      requestId,
      reason: 'gateway_shutdown',
    });
  });

  it.each([
    ['non-JSON', '{', 'not JSON'],
    ['an array', '[]', 'must be an object'],
    ['null', 'null', 'must be an object'],
    ['an unknown reason', raw({ requestId, reason: 'bored' }), "'reason'"],
    ['a missing reason', raw({ requestId }), "'reason'"],
    ['a missing requestId', raw({ reason: 'client_disconnected' }), "'requestId'"],
    ['a numeric requestId', raw({ requestId: 1, reason: 'client_disconnected' }), "'requestId'"],
  ])('rejects %s', (_label, text, reason) => {
    expect(() => parseCancelMessage(text)).toThrow(ProtocolError);
    expect(() => parseCancelMessage(text)).toThrow(reason);
  });
});

describe('parseControlMessage', () => {
  it('reads a reattach and a cancel', () => {
    expect(parseControlMessage(raw({ requestId, reattach: 'mgw:reply:gw-2' }))).toEqual({
      requestId,
      reattach: 'mgw:reply:gw-2',
    });
    expect(parseControlMessage(raw({ requestId, reason: 'client_disconnected' }))).toEqual({
      requestId,
      reason: 'client_disconnected',
    });
  });

  it.each([
    ['an empty channel', raw({ requestId, reattach: '' }), "'reattach' is empty"],
    ['a numeric channel', raw({ requestId, reattach: 1 }), "'reattach'"],
  ])('rejects %s', (_label, text, reason) => {
    expect(() => parseControlMessage(text)).toThrow(reason);
  });

  it('is not a cancel message', () => {
    expect(() => parseCancelMessage(raw({ requestId, reattach: 'mgw:reply:gw-2' }))).toThrow(ProtocolError);
  });
});
