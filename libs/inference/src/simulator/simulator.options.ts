import { ConfigError, type CatalogModel } from '@mgw/config';
import type { BackendSettings } from '../backend-settings';

export const SIMULATOR_BACKEND_KIND = 'simulator';

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
}

export interface ImageSimulatorOptions {
  /** Delay before each image. */
  latencyMs: number;
}

export const SIMULATOR_LIMITS = {
  // Node timers overflow above 2^31-1 ms and would then fire after 1 ms; ten minutes is plenty for a demo.
  delayMs: { min: 0, max: 600_000 },
  tokensPerSecond: { min: 0, max: 1_000_000 },
  maxWords: { min: 1, max: 4096, default: 48 },
  failAfterTokens: { min: 0, max: 1_000_000 },
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

/** Collects every problem of one model's backend block, so an operator fixes the catalog in one pass. */
class OptionReader {
  private readonly problems: string[] = [];

  constructor(
    private readonly model: CatalogModel,
    allowed: readonly string[],
  ) {
    for (const key of Object.keys(model.backend)) {
      if (!allowed.includes(key)) {
        const known = allowed.filter((k) => k !== 'kind').join(', ');
        this.problem(`backend.${key} is not an option of the ${model.kind} simulator (known: ${known})`);
      }
    }
  }

  int(field: string, bounds: { min: number; max: number }, fallback: number): number {
    const value = this.model.backend[field];
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < bounds.min || value > bounds.max) {
      this.problem(`backend.${field} must be an integer from ${bounds.min} to ${bounds.max}`);
      return fallback;
    }
    return value;
  }

  oneOf<T extends string>(field: string, values: readonly T[], fallback: T): T {
    const value = this.model.backend[field];
    if (value === undefined) return fallback;
    if (typeof value !== 'string' || !(values as readonly string[]).includes(value)) {
      this.problem(`backend.${field} must be ${values.map((v) => `'${v}'`).join(' or ')}`);
      return fallback;
    }
    return value as T;
  }

  /** Throws all collected problems at once. */
  finish(): void {
    if (this.problems.length > 0) throw new ConfigError(this.problems);
  }

  private problem(message: string): void {
    this.problems.push(`catalog model "${this.model.id}": ${message}`);
  }
}

/** Catalog options win over the process-wide settings, so one worker can host a fast and a slow simulator. */
export function parseChatSimulatorOptions(
  model: CatalogModel,
  settings: BackendSettings,
): ChatSimulatorOptions {
  const reader = new OptionReader(model, CHAT_OPTION_KEYS);
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
  reader.finish();
  return options;
}

export function parseImageSimulatorOptions(
  model: CatalogModel,
  settings: BackendSettings,
): ImageSimulatorOptions {
  const reader = new OptionReader(model, IMAGE_OPTION_KEYS);
  const options: ImageSimulatorOptions = {
    latencyMs: reader.int('latencyMs', SIMULATOR_LIMITS.delayMs, settings.simImageLatencyMs),
  };
  reader.finish();
  return options;
}
