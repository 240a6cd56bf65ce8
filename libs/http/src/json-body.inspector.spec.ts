import { inspectJson } from './json-body.inspector';

const nested = (depth: number): unknown => JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`);

describe('inspectJson', () => {
  it('accepts scalars and shallow documents', () => {
    expect(inspectJson('x')).toBeNull();
    expect(inspectJson(null)).toBeNull();
    expect(inspectJson({ messages: [{ content: [{ image_url: { url: 'u' } }] }] })).toBeNull();
  });

  it('counts each object or array level, up to the limit inclusive', () => {
    expect(inspectJson(nested(4), 4)).toBeNull();
    expect(inspectJson(nested(5), 4)).toEqual({ kind: 'too_deep' });
    expect(inspectJson({ a: { b: { c: {} } } }, 4)).toBeNull();
    expect(inspectJson({ a: { b: { c: { d: {} } } } }, 4)).toEqual({ kind: 'too_deep' });
  });

  it('handles hostile depths without recursion', () => {
    expect(inspectJson(nested(100_000))).toEqual({ kind: 'too_deep' });
  });

  it.each(['constructor', 'prototype'])('finds a %s key at any level (found by the fuzz suite)', (key) => {
    expect(inspectJson(JSON.parse(`{"${key}":1}`))).toEqual({ kind: 'prototype_key', key });
    expect(inspectJson(JSON.parse(`{"messages":[{"${key}":{}}]}`))).toEqual({ kind: 'prototype_key', key });
  });

  it('does not mind those words as values', () => {
    expect(
      inspectJson({ messages: [{ role: 'user', content: 'constructor prototype __proto__' }] }),
    ).toBeNull();
  });
});
