import type { CatalogModel } from '@mgw/config';
import { BackendOptionReader, type BackendSettings } from '@mgw/inference';

export { SIMULATOR_BACKEND_KIND } from '@mgw/contracts';

export const CHAT_SIMULATOR_MODES = ['echo', 'words'] as const;
export type ChatSimulatorMode = (typeof CHAT_SIMULATOR_MODES)[number];

export interface ChatSimulatorOptions {
  /** 'echo' repeats the last user message; 'words' produces seeded pseudo-text. */
  mode: ChatSimulatorMode;
  /** Delay before the first token. */
  ttftMs: number;
  /** Tokens per second per choice; 0 = as fast as possible. */
  tokensPerSecond: number;
  /** Length of a 'words' answer before its natural end. */
  maxWords: number;
  /**
   * Fault injection for tests and demos: the backend throws after emitting this many deltas, like a
   * backend dying mid-generation. 0 = never.
   */
  failAfterTokens: number;
  /** The catalog's `contextTokens`: a prompt of more tokens is refused with `context_length_exceeded`. */
  contextTokens?: number;
}

export interface ImageSimulatorOptions {
  /** Delay before each image. */
  latencyMs: number;
}

export interface EmbeddingSimulatorOptions {
  /** The fixed cost of one call, whatever its batch holds. */
  callLatencyMs: number;
  /** The cost of each input of a call, in microseconds. */
  inputLatencyUs: number;
  /** Calls that run at once; more wait their turn (one accelerator runs one batch at a time). */
  parallelCalls: number;
}

export const SIMULATOR_LIMITS = {
  // Node timers overflow above 2^31-1 ms and would then fire after 1 ms; ten minutes is plenty for a demo.
  delayMs: { min: 0, max: 600_000 },
  tokensPerSecond: { min: 0, max: 1_000_000 },
  maxWords: { min: 1, max: 4096, default: 48 },
  failAfterTokens: { min: 0, max: 1_000_000 },
  inputLatencyUs: { min: 0, max: 60_000_000 },
  parallelCalls: { min: 1, max: 1024, default: 1 },
} as const;

const CHAT_OPTION_KEYS = [
  'kind',
  'mode',
  'ttftMs',
  'tokensPerSecond',
  'maxWords',
  'failAfterTokens',
] as const;
const IMAGE_OPTION_KEYS = ['kind', 'latencyMs'] as const;
const EMBEDDING_OPTION_KEYS = ['kind', 'callLatencyMs', 'inputLatencyUs', 'parallelCalls'] as const;

/** Catalog options win over the process-wide settings, so one worker can host a fast and a slow simulator. */
export function parseChatSimulatorOptions(
  model: CatalogModel,
  settings: BackendSettings,
): ChatSimulatorOptions {
  const reader = new BackendOptionReader(model, CHAT_OPTION_KEYS, 'the chat simulator');
  const options: ChatSimulatorOptions = {
    mode: reader.oneOf('mode', CHAT_SIMULATOR_MODES, 'echo'),
    ttftMs: reader.int('ttftMs', SIMULATOR_LIMITS.delayMs, settings.simChatTtftMs),
    tokensPerSecond: reader.int(
      'tokensPerSecond',
      SIMULATOR_LIMITS.tokensPerSecond,
      settings.simChatTokensPerS,
    ),
    maxWords: reader.int('maxWords', SIMULATOR_LIMITS.maxWords, SIMULATOR_LIMITS.maxWords.default),
    failAfterTokens: reader.int('failAfterTokens', SIMULATOR_LIMITS.failAfterTokens, 0),
  };
  if (model.contextTokens !== undefined) options.contextTokens = model.contextTokens;
  reader.finish();
  return options;
}

export function parseImageSimulatorOptions(
  model: CatalogModel,
  settings: BackendSettings,
): ImageSimulatorOptions {
  const reader = new BackendOptionReader(model, IMAGE_OPTION_KEYS, 'the image simulator');
  const options: ImageSimulatorOptions = {
    latencyMs: reader.int('latencyMs', SIMULATOR_LIMITS.delayMs, settings.simImageLatencyMs),
  };
  reader.finish();
  return options;
}

export function parseEmbeddingSimulatorOptions(
  model: CatalogModel,
  _settings: BackendSettings,
): EmbeddingSimulatorOptions {
  const reader = new BackendOptionReader(model, EMBEDDING_OPTION_KEYS, 'the embedding simulator');
  const { delayMs, inputLatencyUs, parallelCalls } = SIMULATOR_LIMITS;
  const options: EmbeddingSimulatorOptions = {
    callLatencyMs: reader.int('callLatencyMs', delayMs, 0),
    inputLatencyUs: reader.int('inputLatencyUs', inputLatencyUs, 0),
    parallelCalls: reader.int('parallelCalls', parallelCalls, parallelCalls.default),
  };
  reader.finish();
  return options;
}
