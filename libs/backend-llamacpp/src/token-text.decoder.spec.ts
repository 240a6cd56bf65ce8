import { TokenTextDecoder } from './token-text.decoder';

/** A byte-level tokenizer: each token is one byte; decoding replaces broken UTF-8 as llama.cpp's binding does. */
const bytes = (text: string) => [...Buffer.from(text, 'utf8')];
const decoder = () => new TokenTextDecoder((tokens) => Buffer.from(tokens).toString('utf8'));

describe('TokenTextDecoder', () => {
  it('passes whole characters through token by token', () => {
    const d = decoder();
    expect(bytes('ab').map((t) => d.push(t))).toEqual(['a', 'b']);
    expect(d.flush()).toBe('');
  });

  it('holds the bytes of a multi-byte character until it is complete', () => {
    const d = decoder();
    expect(bytes('é€😀').map((t) => d.push(t))).toEqual(['', 'é', '', '', '€', '', '', '', '😀']);
  });

  it('sends genuinely invalid bytes after one character worth of tokens', () => {
    const d = decoder();
    expect([0xe2, 0x82, 0x41].map((t) => d.push(t))).toEqual(['', '', '\uFFFDA']);
    expect([0xff, 0xff, 0xff, 0xff].map((t) => d.push(t)).join('')).toBe('\uFFFD'.repeat(4));
  });

  it('flushes an unfinished character at the end', () => {
    const d = decoder();
    d.push(0xe2);
    expect(d.flush()).toBe('\uFFFD');
    expect(d.flush()).toBe('');
  });

  it('gives the detokenizer the preceding tokens as context', () => {
    const contexts: number[][] = [];
    const d = new TokenTextDecoder((tokens, context) => (contexts.push([...context]), String(tokens.length)));
    d.push(1);
    d.push(2);
    expect(contexts).toEqual([[], [1]]);
  });
});
