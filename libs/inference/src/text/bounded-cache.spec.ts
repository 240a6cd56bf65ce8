import { BoundedCache } from './bounded-cache';

describe('BoundedCache', () => {
  it('computes once per key and serves the remembered value after', () => {
    const cache = new BoundedCache<number>(10, 100);
    const compute = jest.fn(() => 42);
    expect(cache.getOrCompute('a', compute)).toBe(42);
    expect(cache.getOrCompute('a', compute)).toBe(42);
    expect(compute).toHaveBeenCalledTimes(1);
  });

  it('evicts the least recently used key beyond maxEntries', () => {
    const cache = new BoundedCache<string>(2, 100);
    cache.getOrCompute('a', () => 'A');
    cache.getOrCompute('b', () => 'B');
    cache.getOrCompute('a', () => 'stale'); // touches a, so b is now the oldest
    cache.getOrCompute('c', () => 'C');
    expect(cache.size).toBe(2);
    expect(cache.getOrCompute('a', () => 'recomputed')).toBe('A');
    expect(cache.getOrCompute('b', () => 'recomputed')).toBe('recomputed');
  });

  it('does not remember keys longer than maxKeyLength, or values it is told not to', () => {
    const cache = new BoundedCache<number>(10, 3);
    cache.getOrCompute('long', () => 1);
    cache.getOrCompute(
      'no',
      () => 2,
      () => false,
    );
    expect(cache.size).toBe(0);
    expect(cache.getOrCompute('ok', () => 3)).toBe(3);
    expect(cache.size).toBe(1);
  });
});
