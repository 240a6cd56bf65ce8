import { encodeReplyFrame, MAX_REPLY_FRAME_MESSAGES, parseReplyFrame } from './reply-frame.codec';
import { parseReplyMessage, parseReplyRecord } from './reply-message.parser';
import { ProtocolError } from './protocol.error';
import { raw, valid } from './reply-message.fixtures';

describe('reply frames', () => {
  it('encodes one message as itself and several as an array, which parses back in order', () => {
    const one = raw(valid.started);
    expect(encodeReplyFrame([one])).toBe(one);
    expect(parseReplyMessage(encodeReplyFrame([one]))).toEqual(valid.started);
    const frame = encodeReplyFrame([one, raw(valid.delta), raw(valid['chat-done'])]);
    expect(parseReplyFrame(frame).map(parseReplyRecord)).toEqual([
      valid.started,
      valid.delta,
      valid['chat-done'],
    ]);
  });

  it('bounds a frame at MAX_REPLY_FRAME_MESSAGES messages', () => {
    const full = encodeReplyFrame(Array.from({ length: MAX_REPLY_FRAME_MESSAGES }, () => raw(valid.alive)));
    expect(parseReplyFrame(full)).toHaveLength(MAX_REPLY_FRAME_MESSAGES);
    expect(() => parseReplyFrame(`[${full.slice(1, -1)},{}]`)).toThrow(ProtocolError);
    expect(() => parseReplyFrame('[]')).toThrow(ProtocolError);
    expect(() => parseReplyFrame('[{"a":')).toThrow('not JSON');
  });
});
