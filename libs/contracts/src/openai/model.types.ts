import type { ModelCapabilities, ModelType } from '../model-types';

export interface ModelObject {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  type: ModelType;
  capabilities: ModelCapabilities;
  /**
   * Chat models only, beyond the seed's shape: every OpenAI request parameter the model honours (as
   * OpenRouter lists them); a request using any other gated parameter is refused with a 400.
   */
  supported_parameters?: string[];
  /** Embedding models only: the length of the vectors the model gives (`dimensions` may ask for fewer). */
  dimensions?: number;
}

export interface ModelList {
  object: 'list';
  data: ModelObject[];
}
