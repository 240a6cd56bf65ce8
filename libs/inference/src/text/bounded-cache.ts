/**
 * A small least-recently-used map for results that are pure functions of their key. Keys longer than
 * `maxKeyLength` are not cached, so memory stays bounded by entries × key length whatever clients send.
 */
export class BoundedCache<V> {
  private readonly entries = new Map<string, V>();

  constructor(
    private readonly maxEntries: number,
    private readonly maxKeyLength: number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  getOrCompute(key: string, compute: () => V, shouldCache: (value: V) => boolean = () => true): V {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      // Re-inserting moves the key to the young end of the Map's insertion order.
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    const value = compute();
    if (key.length <= this.maxKeyLength && shouldCache(value)) {
      this.entries.set(key, value);
      if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    }
    return value;
  }

  delete(key: string): void {
    this.entries.delete(key);
  }
}
