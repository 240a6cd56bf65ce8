export interface GeneratedImageData {
  b64_json: string;
  revised_prompt: string;
}

export interface ImagesResponse {
  created: number;
  data: GeneratedImageData[];
}
