import { ConfigError, type CatalogModel } from '@mgw/config';
import type { ModelKind } from '@mgw/contracts';
import type { BackendSettings } from './backend-settings';
import type { ChatBackend } from './chat-backend.interface';
import type { EmbeddingBackend } from './embedding-backend.interface';
import type { ImageBackend } from './image-backend.interface';
import { OpenAIChatBackend } from './openai/openai-chat.backend';
import { OpenAIEmbeddingBackend } from './openai/openai-embedding.backend';
import { OpenAIImageBackend } from './openai/openai-image.backend';
import { OPENAI_BACKEND_KIND } from './openai/openai.options';
import { LlamaCppChatBackend } from './llamacpp/llamacpp-chat.backend';
import { LlamaCppEmbeddingBackend } from './llamacpp/llamacpp-embedding.backend';
import { LLAMACPP_BACKEND_KIND } from './llamacpp/llamacpp.options';
import { ChatSimulatorBackend } from './simulator/chat-simulator.backend';
import { EmbeddingSimulatorBackend } from './simulator/embedding-simulator.backend';
import { ImageSimulatorBackend } from './simulator/image-simulator.backend';
import { SIMULATOR_BACKEND_KIND } from './simulator/simulator.options';

/** Builds a backend from its catalog entry; throws ConfigError for options it cannot accept. */
export type BackendFactory<T> = (model: CatalogModel, settings: BackendSettings) => T;

// A new backend is one folder exporting a factory plus one entry here. Maps rather than object literals,
// so a catalog `kind` such as "constructor" cannot resolve to an Object.prototype member.
const CHAT_BACKENDS = new Map<string, BackendFactory<ChatBackend>>([
  [SIMULATOR_BACKEND_KIND, ChatSimulatorBackend.fromCatalog],
  [OPENAI_BACKEND_KIND, OpenAIChatBackend.fromCatalog],
  [LLAMACPP_BACKEND_KIND, LlamaCppChatBackend.fromCatalog],
]);

const IMAGE_BACKENDS = new Map<string, BackendFactory<ImageBackend>>([
  [SIMULATOR_BACKEND_KIND, ImageSimulatorBackend.fromCatalog],
  [OPENAI_BACKEND_KIND, OpenAIImageBackend.fromCatalog],
]);

const EMBEDDING_BACKENDS = new Map<string, BackendFactory<EmbeddingBackend>>([
  [SIMULATOR_BACKEND_KIND, EmbeddingSimulatorBackend.fromCatalog],
  [OPENAI_BACKEND_KIND, OpenAIEmbeddingBackend.fromCatalog],
  [LLAMACPP_BACKEND_KIND, LlamaCppEmbeddingBackend.fromCatalog],
]);

export const KNOWN_CHAT_BACKENDS: readonly string[] = [...CHAT_BACKENDS.keys()];
export const KNOWN_IMAGE_BACKENDS: readonly string[] = [...IMAGE_BACKENDS.keys()];
export const KNOWN_EMBEDDING_BACKENDS: readonly string[] = [...EMBEDDING_BACKENDS.keys()];

function create<T>(
  registry: ReadonlyMap<string, BackendFactory<T>>,
  wanted: ModelKind,
  model: CatalogModel,
  settings: BackendSettings,
): T {
  if (model.kind !== wanted) {
    const article = (kind: ModelKind) => (kind === 'chat' ? `a ${kind}` : `an ${kind}`);
    throw new ConfigError([
      `catalog model "${model.id}": is ${article(model.kind)} model, not ${article(wanted)} model`,
    ]);
  }
  const kind = model.backend.kind;
  const factory = registry.get(kind);
  if (factory === undefined) {
    const known = [...registry.keys()].join(', ');
    throw new ConfigError([
      `catalog model "${model.id}": backend.kind "${kind}" is not a known ${wanted} backend (known: ${known})`,
    ]);
  }
  return factory(model, settings);
}

export function createChatBackend(model: CatalogModel, settings: BackendSettings): ChatBackend {
  return create(CHAT_BACKENDS, 'chat', model, settings);
}

export function createImageBackend(model: CatalogModel, settings: BackendSettings): ImageBackend {
  return create(IMAGE_BACKENDS, 'image', model, settings);
}

export function createEmbeddingBackend(model: CatalogModel, settings: BackendSettings): EmbeddingBackend {
  return create(EMBEDDING_BACKENDS, 'embedding', model, settings);
}
