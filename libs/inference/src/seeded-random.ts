/**
 * Deterministic randomness for the simulators. Not cryptographic: the only goals are that the same seed
 * replays the same output on every machine and Node version, and that nearby seeds look unrelated.
 */

const FNV_OFFSET_BASIS = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a over the UTF-16 code units; stable and allocation-free, which is all a seed needs. */
export function fnv1a32(text: string): number {
  let hash = FNV_OFFSET_BASIS;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // Both bytes of the code unit, so strings that differ only above Latin-1 still hash differently.
    hash = Math.imul(hash ^ (unit & 0xff), FNV_PRIME);
    hash = Math.imul(hash ^ (unit >>> 8), FNV_PRIME);
  }
  return hash >>> 0;
}

/**
 * Folds any finite number (a client's `seed` may be negative or wider than 32 bits) into 32 bits
 * without discarding the high half, so seeds 1 and 2^32 + 1 do not collide.
 */
export function toSeed32(seed: number): number {
  if (!Number.isFinite(seed)) return fnv1a32(String(seed));
  const integer = Math.trunc(seed);
  const low = integer >>> 0;
  const high = Math.floor(integer / 0x1_0000_0000) >>> 0;
  return (low ^ Math.imul(high, 0x9e3779b1)) >>> 0;
}

/** mulberry32: one 32-bit word of state, good statistical quality for its size, a handful of ops per draw. */
export class SeededRandom {
  private state: number;

  constructor(seed: number) {
    this.state = toSeed32(seed);
  }

  /** Uniform integer in [0, 2^32). */
  nextUint32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** Uniform float in [0, 1). */
  next(): number {
    return this.nextUint32() / 0x1_0000_0000;
  }

  /** Uniform integer in [0, bound); `bound` must be a positive integer. */
  nextInt(bound: number): number {
    return Math.floor(this.next() * bound);
  }

  /** Uniform integer in [min, max], both inclusive. */
  nextIntBetween(min: number, max: number): number {
    return min + this.nextInt(max - min + 1);
  }
}
