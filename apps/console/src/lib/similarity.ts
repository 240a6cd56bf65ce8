/** Cosine similarity of two vectors (the gateway's are unit length, but a client may not assume it). */
export function cosineSimilarity(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length && i < b.length; i++) {
    dot += a[i]! * b[i]!;
    normA += a[i]! * a[i]!;
    normB += b[i]! * b[i]!;
  }
  return normA === 0 || normB === 0 ? 0 : dot / Math.sqrt(normA * normB);
}

/** Every pair's similarity: row i, column j is texts i and j. */
export function similarityMatrix(vectors: readonly (readonly number[])[]): number[][] {
  return vectors.map((a) => vectors.map((b) => cosineSimilarity(a, b)));
}
