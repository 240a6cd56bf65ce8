import { peekRequestId, peekRequestIds, requestIdOfRecord } from './request-id.peek';
import { requestId } from './reply-message.fixtures';

describe('requestIdOfRecord', () => {
  it("finds a message's request id only where it is a well-formed id", () => {
    expect(requestIdOfRecord({ requestId, kind: 'nonsense' })).toBe(requestId);
    expect(requestIdOfRecord({ requestId: 'has spaces' })).toBeNull();
    expect(requestIdOfRecord({ requestId: 7 })).toBeNull();
    expect(requestIdOfRecord('req_0123456789')).toBeNull();
    expect(requestIdOfRecord(null)).toBeNull();
  });
});

describe('peekRequestIds', () => {
  it('finds every request id of a broken frame once, in order', () => {
    const text = `[{"requestId":"req_bbbbbbbb","seq":0},{"requestId":"${requestId}"},{"requestId":"req_bbbbbbbb","seq":1},{"requestId":`;
    expect(peekRequestIds(text)).toEqual(['req_bbbbbbbb', requestId]);
    expect(peekRequestIds('total garbage')).toEqual([]);
  });
});

describe('peekRequestId', () => {
  it('finds the request id in a truncated message', () => {
    expect(peekRequestId('{"requestId":"req_0123456789","seq":')).toBe(requestId);
  });

  it('tolerates whitespace around the colon', () => {
    expect(peekRequestId('{ "requestId" :  "abc-DEF_123" }')).toBe('abc-DEF_123');
  });

  it.each([
    ['no request id at all', '{"seq":1}'],
    ['a numeric request id', '{"requestId":12345678}'],
    ['plain text', 'garbage'],
    ['an id with forbidden characters', '{"requestId":"a b"}'],
  ])('returns null for %s', (_label, text) => {
    expect(peekRequestId(text)).toBeNull();
  });
});
