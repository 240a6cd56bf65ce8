import { StopSequenceMatcher } from './stop-sequence.matcher';

/** Feeds fragments and returns what a client would have received. */
function run(stops: string[], fragments: string[]): { text: string; stopped: boolean; emits: string[] } {
  const matcher = new StopSequenceMatcher(stops);
  const emits: string[] = [];
  for (const fragment of fragments) {
    const { emit, stopped } = matcher.push(fragment);
    emits.push(emit);
    if (stopped) return { text: emits.join(''), stopped: true, emits };
  }
  emits.push(matcher.flush());
  return { text: emits.join(''), stopped: false, emits };
}

describe('StopSequenceMatcher', () => {
  it('passes text through unchanged without stop sequences', () => {
    const matcher = new StopSequenceMatcher([]);
    expect(matcher.push('Hello ')).toEqual({ emit: 'Hello ', stopped: false });
    expect(matcher.push('world')).toEqual({ emit: 'world', stopped: false });
    expect(matcher.flush()).toBe('');
  });

  it('cuts before a stop sequence inside one fragment and never emits the sequence', () => {
    expect(run(['END'], ['one two END three'])).toEqual({
      text: 'one two ',
      stopped: true,
      emits: ['one two '],
    });
  });

  it('names the stop sequence that cut the text: the earliest in it', () => {
    const matcher = new StopSequenceMatcher(['END', 'STOP']);
    expect(matcher.matched).toBeNull();
    matcher.push('one STOP two END');
    expect(matcher.matched).toBe('STOP');
  });

  it('detects a stop sequence split over several fragments', () => {
    const result = run(['<|stop|>'], ['Hello <', '|st', 'op', '|> ignored']);
    expect(result.text).toBe('Hello ');
    expect(result.stopped).toBe(true);
    expect(result.emits).toEqual(['Hello ', '', '', '']);
  });

  it('holds back only a possible prefix and releases it when it turns out not to match', () => {
    const matcher = new StopSequenceMatcher(['STOP']);
    expect(matcher.push('go ST')).toEqual({ emit: 'go ', stopped: false });
    expect(matcher.push('ART now')).toEqual({ emit: 'START now', stopped: false });
    expect(matcher.flush()).toBe('');
  });

  it('returns the held tail on flush at the natural end', () => {
    const matcher = new StopSequenceMatcher(['\n\n']);
    expect(matcher.push('last line\n')).toEqual({ emit: 'last line', stopped: false });
    expect(matcher.flush()).toBe('\n');
  });

  it('stops at the earliest of several sequences', () => {
    expect(run(['world', 'lo w'], ['hel', 'lo world']).text).toBe('hel');
    expect(run(['xyz', 'b'], ['aaab xyz']).text).toBe('aaa');
  });

  it('handles overlapping prefixes (a longer candidate must not hide a shorter match)', () => {
    expect(run(['aab'], ['a', 'a', 'a', 'b', 'c']).text).toBe('a');
  });

  it('swallows everything after stopping and flushes nothing', () => {
    const matcher = new StopSequenceMatcher(['.']);
    expect(matcher.push('Done. More')).toEqual({ emit: 'Done', stopped: true });
    expect(matcher.isStopped).toBe(true);
    expect(matcher.push('text')).toEqual({ emit: '', stopped: true });
    expect(matcher.flush()).toBe('');
  });

  it('ignores empty stop sequences', () => {
    expect(run([''], ['abc']).text).toBe('abc');
  });

  it('reassembles the full text when nothing matches, whatever the fragmentation', () => {
    const text = 'the stop sign stood still; s-t-o-p';
    for (let size = 1; size <= 5; size++) {
      const fragments = text.match(new RegExp(`[^]{1,${size}}`, 'g')) ?? [];
      expect(run(['stop!', 'still!'], fragments)).toMatchObject({ text, stopped: false });
    }
  });
});
