import { ConfigError, type CatalogModel } from '@mgw/config';
import type { ModelKind } from '@mgw/contracts';
import {
  LLAMACPP_BACKEND_KIND,
  LlamaCppChatBackend,
  LlamaCppEmbeddingBackend,
  parseLlamaCppOptions,
} from '@mgw/backend-llamacpp';
import {
  OPENAI_BACKEND_KIND,
  OpenAIChatBackend,
  OpenAIEmbeddingBackend,
  OpenAIImageBackend,
  parseOpenAIBackendOptions,
} from '@mgw/backend-openai';
import {
  ChatSimulatorBackend,
  EmbeddingSimulatorBackend,
  ImageSimulatorBackend,
  parseChatSimulatorOptions,
  parseEmbeddingSimulatorOptions,
  parseImageSimulatorOptions,
  SIMULATOR_BACKEND_KIND,
} from '@mgw/backend-simulator';
import type { BackendSettings, ChatBackend, EmbeddingBackend, ImageBackend } from '@mgw/inference';

/** Builds a backend from its catalog entry; throws ConfigError for options it cannot accept. */
export type BackendFactory<T> = (model: CatalogModel, settings: BackendSettings) => T;

/** A backend kind: its options check (throws ConfigError, builds nothing) and its factory. */
interface BackendEntry<T> {
  check: (model: CatalogModel, settings: BackendSettings) => unknown;
  create: BackendFactory<T>;
}

// A new backend is one folder exporting a factory plus one entry here. Maps rather than object literals,
// so a catalog `kind` such as "constructor" cannot resolve to an Object.prototype member.
const CHAT_BACKENDS = new Map<string, BackendEntry<ChatBackend>>([
  [SIMULATOR_BACKEND_KIND, { check: parseChatSimulatorOptions, create: ChatSimulatorBackend.fromCatalog }],
  [OPENAI_BACKEND_KIND, { check: parseOpenAIBackendOptions, create: OpenAIChatBackend.fromCatalog }],
  [LLAMACPP_BACKEND_KIND, { check: parseLlamaCppOptions, create: LlamaCppChatBackend.fromCatalog }],
]);

const IMAGE_BACKENDS = new Map<string, BackendEntry<ImageBackend>>([
  [SIMULATOR_BACKEND_KIND, { check: parseImageSimulatorOptions, create: ImageSimulatorBackend.fromCatalog }],
  [OPENAI_BACKEND_KIND, { check: parseOpenAIBackendOptions, create: OpenAIImageBackend.fromCatalog }],
]);

const EMBEDDING_BACKENDS = new Map<string, BackendEntry<EmbeddingBackend>>([
  [
    SIMULATOR_BACKEND_KIND,
    { check: parseEmbeddingSimulatorOptions, create: EmbeddingSimulatorBackend.fromCatalog },
  ],
  [OPENAI_BACKEND_KIND, { check: parseOpenAIBackendOptions, create: OpenAIEmbeddingBackend.fromCatalog }],
  [LLAMACPP_BACKEND_KIND, { check: parseLlamaCppOptions, create: LlamaCppEmbeddingBackend.fromCatalog }],
]);

export const KNOWN_CHAT_BACKENDS: readonly string[] = [...CHAT_BACKENDS.keys()];
export const KNOWN_IMAGE_BACKENDS: readonly string[] = [...IMAGE_BACKENDS.keys()];
export const KNOWN_EMBEDDING_BACKENDS: readonly string[] = [...EMBEDDING_BACKENDS.keys()];

function entryOf<T>(
  registry: ReadonlyMap<string, BackendEntry<T>>,
  wanted: ModelKind,
  model: CatalogModel,
): BackendEntry<T> {
  if (model.kind !== wanted) {
    const article = (kind: ModelKind) => (kind === 'chat' ? `a ${kind}` : `an ${kind}`);
    throw new ConfigError([
      `catalog model "${model.id}": is ${article(model.kind)} model, not ${article(wanted)} model`,
    ]);
  }
  const kind = model.backend.kind;
  const entry = registry.get(kind);
  if (entry === undefined) {
    const known = [...registry.keys()].join(', ');
    throw new ConfigError([
      `catalog model "${model.id}": backend.kind "${kind}" is not a known ${wanted} backend (known: ${known})`,
    ]);
  }
  return entry;
}

/**
 * Checks that a backend of kind `wanted` can be built for `model` (its kind, its options), building nothing:
 * what a process checks before it starts, so a bad catalog entry is one clear ConfigError.
 */
export function checkBackendOf(wanted: ModelKind, model: CatalogModel, settings: BackendSettings): void {
  const entry =
    wanted === 'chat'
      ? entryOf(CHAT_BACKENDS, wanted, model)
      : wanted === 'image'
        ? entryOf(IMAGE_BACKENDS, wanted, model)
        : entryOf(EMBEDDING_BACKENDS, wanted, model);
  entry.check(model, settings);
}

export function createChatBackend(model: CatalogModel, settings: BackendSettings): ChatBackend {
  return entryOf(CHAT_BACKENDS, 'chat', model).create(model, settings);
}

export function createImageBackend(model: CatalogModel, settings: BackendSettings): ImageBackend {
  return entryOf(IMAGE_BACKENDS, 'image', model).create(model, settings);
}

export function createEmbeddingBackend(model: CatalogModel, settings: BackendSettings): EmbeddingBackend {
  return entryOf(EMBEDDING_BACKENDS, 'embedding', model).create(model, settings);
}
