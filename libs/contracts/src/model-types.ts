/** The literal values are binding wire contract (including the spec's `chat/compilations`). */
export const CHAT_MODEL_TYPE = 'chat/compilations';
export const IMAGE_MODEL_TYPE = 'images/generations';
export type ModelType = typeof CHAT_MODEL_TYPE | typeof IMAGE_MODEL_TYPE;
export const MODEL_TYPES: readonly ModelType[] = [CHAT_MODEL_TYPE, IMAGE_MODEL_TYPE];

/** The short name used in queue names, env values and the catalog. */
export type ModelKind = 'chat' | 'image';

export function modelTypeOf(kind: ModelKind): ModelType {
  return kind === 'chat' ? CHAT_MODEL_TYPE : IMAGE_MODEL_TYPE;
}

export interface ModalityFlags {
  text: boolean;
  image: boolean;
}

export interface ModelCapabilities {
  inputCapabilities: ModalityFlags;
  outputCapabilities: ModalityFlags;
}

/** Capabilities follow from the type: the spec fixes them per type. */
export function capabilitiesOf(type: ModelType): ModelCapabilities {
  return type === CHAT_MODEL_TYPE
    ? { inputCapabilities: { text: true, image: true }, outputCapabilities: { text: true, image: false } }
    : { inputCapabilities: { text: true, image: false }, outputCapabilities: { text: false, image: true } };
}
