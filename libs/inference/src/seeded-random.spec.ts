import { fnv1a32, SeededRandom, toSeed32 } from './seeded-random';

describe('seeded-random', () => {
  it('hashes with FNV-1a deterministically into 32 bits', () => {
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('hello')).toBe(fnv1a32('hello'));
    expect(fnv1a32('hello')).not.toBe(fnv1a32('hellp'));
    expect(fnv1a32('日本')).not.toBe(fnv1a32('日本語'));
    const hash = fnv1a32('any text');
    expect(Number.isInteger(hash) && hash >= 0 && hash < 2 ** 32).toBe(true);
  });

  it('folds wide and negative seeds without collisions between obvious neighbours', () => {
    expect(toSeed32(1)).not.toBe(toSeed32(2 ** 32 + 1));
    expect(toSeed32(-1)).not.toBe(toSeed32(1));
    expect(toSeed32(42)).toBe(42);
  });

  it('replays the same stream for the same seed and a different one for another seed', () => {
    const draw = (seed: number) => {
      const random = new SeededRandom(seed);
      return Array.from({ length: 8 }, () => random.nextUint32());
    };
    expect(draw(7)).toEqual(draw(7));
    expect(draw(7)).not.toEqual(draw(8));
  });

  it('stays in range and covers it', () => {
    const random = new SeededRandom(123);
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) {
      const value = random.next();
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThan(1);
      const int = random.nextIntBetween(3, 7);
      expect(int).toBeGreaterThanOrEqual(3);
      expect(int).toBeLessThanOrEqual(7);
      seen.add(int);
    }
    expect([...seen].sort()).toEqual([3, 4, 5, 6, 7]);
  });
});
