import { requestIdOfCompletion, resumePosition } from './chat-stream.resumer';
import { refusal } from '@mgw/testing';

describe('resume request parsing', () => {
  it('takes the request id out of a completion id, and names a malformed one as the stored routes do', () => {
    expect(requestIdOfCompletion('chatcmpl-0123abcd4567')).toBe('0123abcd4567');
    for (const bad of [
      '0123abcd4567',
      'chatcmpl-',
      'chatcmpl-abc',
      'chatcmpl-../../x',
      `chatcmpl-${'a'.repeat(65)}`,
    ]) {
      const error = refusal(() => requestIdOfCompletion(bad));
      expect({ status: error.status, code: error.code, param: error.param }).toEqual({
        status: 400,
        code: 'invalid_completion_id',
        param: 'completion_id',
      });
    }
  });

  it('resumes after Last-Event-ID before starting_after, from the start without either, and refuses non-integers', () => {
    expect(resumePosition(undefined, undefined)).toBe(-1);
    expect(resumePosition('7', undefined)).toBe(7);
    expect(resumePosition('7', ' 12 ')).toBe(12);
    expect(resumePosition('0', '')).toBe(0);
    for (const [startingAfter, lastEventId, param] of [
      ['-1', undefined, 'starting_after'],
      ['1.5', undefined, 'starting_after'],
      [['1', '2'], undefined, 'starting_after'],
      [undefined, 'abc', 'Last-Event-ID'],
    ] as const) {
      const error = refusal(() => resumePosition(startingAfter, lastEventId));
      expect({ status: error.status, code: error.code, param: error.param }).toEqual({
        status: 400,
        code: 'invalid_starting_after',
        param,
      });
    }
  });
});
