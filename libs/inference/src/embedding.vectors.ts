/**
 * Scales `vector` to unit length in place (a zero vector stays zero), as OpenAI's embeddings are: cosine
 * similarity is then a dot product.
 */
export function normalize(vector: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
  if (sum === 0) return vector;
  const scale = 1 / Math.sqrt(sum);
  for (let i = 0; i < vector.length; i++) vector[i] = vector[i]! * scale;
  return vector;
}

/**
 * The first `dimensions` values of a model's vector, scaled back to unit length: how models trained for
 * shorter vectors (text-embedding-3's `dimensions`) shorten them.
 */
export function shorten(vector: ArrayLike<number>, dimensions: number): Float32Array {
  const short = new Float32Array(dimensions);
  for (let i = 0; i < dimensions && i < vector.length; i++) short[i] = vector[i]!;
  return normalize(short);
}
