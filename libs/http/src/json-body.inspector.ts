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

/** One iterative (stack-safe) walk over a parsed body: too deep, or a prototype-related key anywhere. */
export function inspectJson(value: unknown, maxDepth = MAX_JSON_DEPTH): JsonProblem {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > maxDepth) return { kind: 'too_deep' };
    if (!Array.isArray(node)) {
      for (const key of Object.keys(node)) if (PROTOTYPE_KEYS.has(key)) return { kind: 'prototype_key', key };
    }
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return null;
}
