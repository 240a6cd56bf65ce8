/** One vector of `POST /v1/embeddings`: floats, or base64 of its little-endian float32 bytes. */
export interface EmbeddingObject {
  object: 'embedding';
  index: number;
  embedding: number[] | string;
}

export interface EmbeddingsResponse {
  object: 'list';
  data: EmbeddingObject[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}
