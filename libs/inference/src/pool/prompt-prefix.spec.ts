import type { InferenceMessage } from '../chat-backend.interface';
import { estimatePromptTokens, promptPrefixKey } from './prompt-prefix';
import { rendezvousOrder } from './rendezvous-order';

const system = 'You are a careful assistant. '.repeat(200); // ~1,450 tokens
const request = (messages: InferenceMessage[], promptCacheKey?: string) => ({
  messages,
  tools: [],
  ...(promptCacheKey !== undefined && { promptCacheKey }),
});
const turn = (question: string, turns: number): InferenceMessage[] => {
  const messages: InferenceMessage[] = [
    { role: 'system', content: system },
    { role: 'user', content: question },
  ];
  for (let i = 1; i < turns; i++) {
    messages.push({ role: 'assistant', content: `answer ${i}` }, { role: 'user', content: `more ${i}` });
  }
  return messages;
};

describe('promptPrefixKey', () => {
  it('gives every turn of a conversation the same key', () => {
    const keys = [1, 2, 3, 6].map((turns) => promptPrefixKey(request(turn('What is a monad?', turns)), 256));
    expect(keys[0]).not.toBeNull();
    expect(new Set(keys).size).toBe(1);
  });

  it('tells conversations that share a system prompt apart by their first question', () => {
    const a = promptPrefixKey(request(turn('What is a monad?', 1)), 256);
    const b = promptPrefixKey(request(turn('What is a functor?', 1)), 256);
    expect(a).not.toEqual(b);
  });

  it('gives a prompt shorter than the threshold no key', () => {
    const short = request([{ role: 'user', content: 'hi' }]);
    expect(estimatePromptTokens(short)).toBeLessThan(256);
    expect(promptPrefixKey(short, 256)).toBeNull();
    expect(promptPrefixKey(short, 0)).not.toBeNull();
  });

  it("uses the client's prompt_cache_key over the prompt", () => {
    const a = promptPrefixKey(request(turn('one', 1), 'user-42'), 256);
    const b = promptPrefixKey(request(turn('two', 3), 'user-42'), 256);
    const c = promptPrefixKey(request(turn('one', 1), 'user-43'), 256);
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
  });

  it('counts text parts and hashes multi-part content', () => {
    const parts: InferenceMessage = {
      role: 'user',
      content: [{ type: 'text', text: 'x'.repeat(2000) }],
    };
    expect(estimatePromptTokens(request([parts]))).toBe(500);
    expect(promptPrefixKey(request([parts]), 256)).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });
});

describe('rendezvousOrder', () => {
  const names = ['a', 'b', 'c', 'd'];

  it('is a permutation, the same for the same key', () => {
    const order = rendezvousOrder('k', names);
    expect([...order].sort()).toEqual([0, 1, 2, 3]);
    expect(rendezvousOrder('k', names)).toEqual(order);
  });

  it('spreads keys evenly over the upstreams', () => {
    const first = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) first[rendezvousOrder(`key-${i}`, names)[0]!]!++;
    for (const count of first) expect(count).toBeGreaterThan(800);
  });

  it('moves only the keys of a removed upstream', () => {
    let moved = 0;
    for (let i = 0; i < 1000; i++) {
      const key = `key-${i}`;
      const before = names[rendezvousOrder(key, names)[0]!]!;
      const after = ['a', 'b', 'c'][rendezvousOrder(key, ['a', 'b', 'c'])[0]!]!;
      if (before !== 'd') expect(after).toBe(before);
      else moved++;
    }
    expect(moved).toBeGreaterThan(150);
  });
});
