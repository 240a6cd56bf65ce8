import type { Redis } from 'ioredis';

/** A Cluster's hash slot of a key: CRC16 (XMODEM) of its hash tag, or of the whole key, modulo 16384. */
function calculateSlot(key: string): number {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  const tagged = close > open + 1 ? key.slice(open + 1, close) : key;
  let crc = 0;
  for (const byte of Buffer.from(tagged)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

/**
 * A Cluster's key layout on one node: the split admission runs as on a Cluster, and every script call is
 * checked to touch one hash slot only (as a Cluster would refuse with CROSSSLOT). `seen` collects every
 * script call's keys; `cluster` false keeps the one-node layout and only collects them.
 */
export function clusterLayout(redis: Redis, seen?: string[][], cluster = true): Redis {
  const sameSlot = (numKeys: unknown, rest: unknown[]) => {
    const keys = rest.slice(0, Number(numKeys)).map(String);
    const slots = new Set(keys.map((key) => calculateSlot(key)));
    if (slots.size > 1) throw new Error(`CROSSSLOT: ${keys.join(' ')}`);
  };
  return new Proxy(redis, {
    get(target, property, receiver) {
      if (property === 'isCluster') return cluster;
      if (property === 'evalsha' || property === 'eval') {
        return (script: string, numKeys: number, ...rest: (string | number)[]) => {
          if (cluster) sameSlot(numKeys, rest);
          seen?.push(rest.slice(0, numKeys).map(String));
          return property === 'evalsha'
            ? target.evalsha(script, numKeys, ...rest)
            : target.eval(script, numKeys, ...rest);
        };
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
