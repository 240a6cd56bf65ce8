/**
 * Our request bodies nest a handful of levels (body → messages → content parts → image_url); anything
 * far deeper is hostile, and would exhaust the stack of the recursive DTO transformer that runs next.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * Keys no request of ours has, that reach Object.prototype machinery when a body is turned into a class
 * instance (`__proto__` itself is refused by the JSON parser).
 */
const PROTOTYPE_KEYS = new Set(['constructor', 'prototype', '__proto__']);

export type JsonProblem = { kind: 'too_deep' } | { kind: 'prototype_key'; key: string } | null;

/**
 * One iterative (stack-safe) walk over a parsed body: too deep, or a prototype-related key anywhere. It runs
 * on every body, and a 10 MB body of tiny content parts has ~400,000 objects: two parallel stacks instead of
 * a [node, depth] pair per object, and `for…in` instead of arrays of keys and values, so a walk allocates
 * nothing per object (parsed JSON has only own, enumerable fields).
 */
export function inspectJson(value: unknown, maxDepth = MAX_JSON_DEPTH): JsonProblem {
  const nodes: unknown[] = [value];
  const depths: number[] = [1];
  while (nodes.length > 0) {
    const node = nodes.pop();
    const depth = depths.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > maxDepth) return { kind: 'too_deep' };
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const child: unknown = node[i];
        if (typeof child !== 'object' || child === null) continue;
        nodes.push(child);
        depths.push(depth + 1);
      }
      continue;
    }
    const record = node as Record<string, unknown>;
    for (const key in record) if (PROTOTYPE_KEYS.has(key)) return { kind: 'prototype_key', key };
    for (const key in record) {
      const child = record[key];
      if (typeof child !== 'object' || child === null) continue;
      nodes.push(child);
      depths.push(depth + 1);
    }
  }
  return null;
}
