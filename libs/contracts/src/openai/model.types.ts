import type { ModelCapabilities, ModelType } from '../model-types';

export interface ModelObject {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  type: ModelType;
  capabilities: ModelCapabilities;
}

export interface ModelList {
  object: 'list';
  data: ModelObject[];
}
