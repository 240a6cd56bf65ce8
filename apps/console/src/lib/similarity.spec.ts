import { cosineSimilarity, similarityMatrix } from './similarity';

describe('similarityMatrix', () => {
  it('gives 1 on the diagonal, the cosine elsewhere, and 0 for a zero vector', () => {
    const matrix = similarityMatrix([
      [1, 0],
      [1, 1],
      [0, 2],
    ]);
    expect(matrix.map((row) => row.map((v) => Number(v.toFixed(3))))).toEqual([
      [1, 0.707, 0],
      [0.707, 1, 0.707],
      [0, 0.707, 1],
    ]);
    expect(cosineSimilarity([0, 0], [1, 0])).toBe(0);
  });
});
