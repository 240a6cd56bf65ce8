/**
 * The literal values are binding wire contract (including the spec's `chat/compilations`). The spec names
 * no embedding type; `embeddings` follows its pattern of naming the operation's path.
 */
export const CHAT_MODEL_TYPE = 'chat/compilations';
export const IMAGE_MODEL_TYPE = 'images/generations';
export const EMBEDDING_MODEL_TYPE = 'embeddings';
export type ModelType = typeof CHAT_MODEL_TYPE | typeof IMAGE_MODEL_TYPE | typeof EMBEDDING_MODEL_TYPE;
export const MODEL_TYPES: readonly ModelType[] = [CHAT_MODEL_TYPE, IMAGE_MODEL_TYPE, EMBEDDING_MODEL_TYPE];

/** The short name used in queue names, env values and the catalog. */
export type ModelKind = 'chat' | 'image' | 'embedding';
export const MODEL_KINDS: readonly ModelKind[] = ['chat', 'image', 'embedding'];

const TYPE_OF_KIND: { readonly [K in ModelKind]: ModelType } = {
  chat: CHAT_MODEL_TYPE,
  image: IMAGE_MODEL_TYPE,
  embedding: EMBEDDING_MODEL_TYPE,
};

export function modelTypeOf(kind: ModelKind): ModelType {
  return TYPE_OF_KIND[kind];
}

export interface ModalityFlags {
  text: boolean;
  image: boolean;
}

export interface ModelCapabilities {
  inputCapabilities: ModalityFlags;
  outputCapabilities: ModalityFlags;
}

const CAPABILITIES: { readonly [T in ModelType]: ModelCapabilities } = {
  [CHAT_MODEL_TYPE]: {
    inputCapabilities: { text: true, image: true },
    outputCapabilities: { text: true, image: false },
  },
  [IMAGE_MODEL_TYPE]: {
    inputCapabilities: { text: true, image: false },
    outputCapabilities: { text: false, image: true },
  },
  // An embedding model reads text and answers vectors: neither text nor images come out.
  [EMBEDDING_MODEL_TYPE]: {
    inputCapabilities: { text: true, image: false },
    outputCapabilities: { text: false, image: false },
  },
};

/** Capabilities follow from the type: the spec fixes them per type (a fresh copy each time). */
export function capabilitiesOf(type: ModelType): ModelCapabilities {
  const { inputCapabilities, outputCapabilities } = CAPABILITIES[type];
  return { inputCapabilities: { ...inputCapabilities }, outputCapabilities: { ...outputCapabilities } };
}
