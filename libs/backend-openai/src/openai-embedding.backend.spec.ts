import { GatewayError } from '@mgw/contracts';
import { readUpstreamVectors } from './openai-embedding.backend';

function base64Of(values: readonly number[]): string {
  const vector = Float32Array.from(values);
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64');
}

function answer(embeddings: unknown[]): string {
  return JSON.stringify({
    object: 'list',
    data: embeddings.map((embedding, index) => ({ object: 'embedding', index, embedding })),
  });
}

function norm(vector: Float32Array): number {
  return Math.sqrt(vector.reduce((sum, x) => sum + x * x, 0));
}

/** Values a float32 holds exactly, of norm far from 1. */
const RAW = [3.5, -1.25, 0.1, 7, -0.333, 2].map(Math.fround);

describe('readUpstreamVectors', () => {
  it('returns a vector of the wanted length exactly as sent, norm and all (base64)', () => {
    const [vector] = readUpstreamVectors(answer([base64Of(RAW)]), 1, RAW.length);
    expect(Array.from(vector!)).toEqual(RAW);
    expect(norm(vector!)).toBeGreaterThan(8);
  });

  it('returns floats sent as numbers as their float32 values, unscaled', () => {
    const [vector] = readUpstreamVectors(answer([RAW]), 1, RAW.length);
    expect(Array.from(vector!)).toEqual(RAW);
  });

  it('cuts a longer vector to the wanted length and rescales it to unit length', () => {
    const [vector] = readUpstreamVectors(answer([base64Of(RAW)]), 1, 2);
    expect(vector).toHaveLength(2);
    expect(norm(vector!)).toBeCloseTo(1, 6);
    const scale = 1 / Math.hypot(RAW[0]!, RAW[1]!);
    expect(vector![0]).toBeCloseTo(RAW[0]! * scale, 6);
    expect(vector![1]).toBeCloseTo(RAW[1]! * scale, 6);
  });

  it('keeps a zero vector zero and puts vectors in the order of their index', () => {
    const text = JSON.stringify({
      data: [
        { index: 1, embedding: [0, 0] },
        { index: 0, embedding: [1, 2] },
      ],
    });
    const vectors = readUpstreamVectors(text, 2, 2);
    expect(vectors.map((v) => Array.from(v))).toEqual([
      [1, 2],
      [0, 0],
    ]);
  });

  it.each([
    ['a shorter vector', answer([[1]]), 1, 2, 'returned 1 dimensions where the catalog declares 2'],
    ['too few vectors', answer([[1, 2]]), 2, 2, 'returned 1 embeddings for 2 inputs'],
    ['a broken base64 length', answer(['AAA=']), 1, 1, 'returned embedding 0 of a broken length'],
    ['something other than JSON', 'nope', 1, 1, 'something other than JSON'],
  ])('refuses %s as a protocol error', (_what, text, count, dimensions, message) => {
    let thrown: unknown;
    try {
      readUpstreamVectors(text, count, dimensions);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(GatewayError);
    expect((thrown as GatewayError).code).toBe('upstream_protocol_error');
    expect((thrown as GatewayError).message).toContain(message);
  });
});
