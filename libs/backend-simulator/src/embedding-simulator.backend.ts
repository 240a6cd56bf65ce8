import { setTimeout as sleep } from 'node:timers/promises';
import type { CatalogModel } from '@mgw/config';
import {
  type BackendSettings,
  type EmbeddingBackend,
  type EmbeddingBatchRequest,
  fnv1a32,
  normalize,
} from '@mgw/inference';
import { parseEmbeddingSimulatorOptions, type EmbeddingSimulatorOptions } from './simulator.options';

/** Places each feature adds to; several, so that small vectors still tell features apart. */
const PLACES_PER_FEATURE = 4;
/** Word bigrams count less than words: texts sharing words are close, sharing phrases closer still. */
const BIGRAM_WEIGHT = 0.5;

/** Lower-cased words (letters and digits of any script); token ids stand for words of their own. */
function wordsOf(input: string | number[]): string[] {
  if (typeof input !== 'string') return input.map((id) => `#${id}`);
  return input.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

function addFeature(vector: Float32Array, feature: string, weight: number): void {
  let hash = fnv1a32(feature);
  for (let place = 0; place < PLACES_PER_FEATURE; place++) {
    // The sign halves collisions' bias; each further place rehashes the last.
    const sign = hash & 1 ? 1 : -1;
    const place = (hash >>> 1) % vector.length;
    vector[place] = vector[place]! + sign * weight;
    hash = fnv1a32(`${hash}\u0000${feature}`);
  }
}

/**
 * A deterministic unit vector of `input` from its hashed words and word bigrams (feature hashing): the same
 * text gives the same vector on every worker, and texts that share words are closer than unrelated ones.
 * A text without words (punctuation only) hashes as a whole.
 */
export function simulatedEmbedding(input: string | number[], dimensions: number): Float32Array {
  const vector = new Float32Array(dimensions);
  const words = wordsOf(input);
  if (words.length === 0) addFeature(vector, `\u0001${String(input)}`, 1);
  for (let i = 0; i < words.length; i++) {
    addFeature(vector, words[i]!, 1);
    if (i > 0) addFeature(vector, `${words[i - 1]!}\u0000${words[i]!}`, BIGRAM_WEIGHT);
  }
  return normalize(vector);
}

/**
 * The embedding simulator: vectors from `simulatedEmbedding`, at a cost that makes batching measurable —
 * each call takes `callLatencyMs` plus `inputLatencyUs` per input, and calls run one at a time
 * (`parallelCalls`), as on one accelerator, where a batch costs little more than a single input.
 */
export class EmbeddingSimulatorBackend implements EmbeddingBackend {
  /** Calls waiting for their turn, in order; the running ones are counted in `running`. */
  private readonly turns: (() => void)[] = [];
  private running = 0;

  constructor(private readonly options: EmbeddingSimulatorOptions) {}

  get parallelCalls(): number {
    return this.options.parallelCalls;
  }

  static fromCatalog(this: void, model: CatalogModel, settings: BackendSettings): EmbeddingSimulatorBackend {
    return new EmbeddingSimulatorBackend(parseEmbeddingSimulatorOptions(model, settings));
  }

  async embed(request: EmbeddingBatchRequest, signal: AbortSignal): Promise<Float32Array[]> {
    await this.turn(signal);
    try {
      const costMs =
        this.options.callLatencyMs + (this.options.inputLatencyUs * request.inputs.length) / 1000;
      if (costMs > 0) await sleep(costMs, undefined, { signal });
      signal.throwIfAborted();
      return request.inputs.map((input) => simulatedEmbedding(input, request.dimensions));
    } finally {
      this.running--;
      this.turns.shift()?.();
    }
  }

  async close(): Promise<void> {}

  private async turn(signal: AbortSignal): Promise<void> {
    if (this.running < this.options.parallelCalls && this.turns.length === 0) {
      this.running++;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const take = () => {
        signal.removeEventListener('abort', leave);
        this.running++;
        resolve();
      };
      const leave = () => {
        const index = this.turns.indexOf(take);
        if (index >= 0) this.turns.splice(index, 1);
        reject(signal.reason as Error);
      };
      this.turns.push(take);
      signal.addEventListener('abort', leave, { once: true });
    });
  }
}
