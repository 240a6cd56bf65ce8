import { statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { CatalogModel } from '@mgw/config';
import { BackendOptionReader, type BackendSettings } from '@mgw/inference';

export { LLAMACPP_BACKEND_KIND } from '@mgw/contracts';

export interface LlamaCppOptions {
  /** Absolute path of the GGUF file. */
  modelPath: string;
  /** Tokens each sequence can hold (prompt + completion); null = min(4096, the model's training context). */
  contextSize: number | null;
  /** Parallel sequences in the one context: how many choices (of all running jobs) decode at once. */
  sequences: number;
  /** CPU threads for evaluation; 0 = node-llama-cpp's default (the machine's math cores). */
  threads: number;
  /** Layers offloaded to a GPU; 0 = CPU only (and no GPU backend is even probed). */
  gpuLayers: number;
  /** Tokens per decode batch; null = node-llama-cpp's default (min(512, contextSize × sequences)). */
  batchSize: number | null;
}

export const LLAMACPP_LIMITS = {
  contextSize: { min: 64, max: 1_048_576, default: 4096 },
  sequences: { min: 1, max: 256, default: 4 },
  threads: { min: 0, max: 1024 },
  gpuLayers: { min: 0, max: 100_000 },
  batchSize: { min: 1, max: 1_048_576 },
} as const;

const OPTION_KEYS = [
  'kind',
  'modelPath',
  'contextSize',
  'sequences',
  'threads',
  'gpuLayers',
  'batchSize',
] as const;

/**
 * Reads a `llamacpp` catalog entry. A relative `modelPath` is resolved against the catalog file's
 * directory, so a catalog and its models can move together. The file must exist now: a worker that
 * cannot serve its model must stop at start, not fail every request later.
 */
export function parseLlamaCppOptions(model: CatalogModel, settings: BackendSettings): LlamaCppOptions {
  const reader = new BackendOptionReader(model, OPTION_KEYS, 'the llamacpp backend');
  const given = reader.requiredString('modelPath');
  const modelPath = isAbsolute(given) ? given : resolve(settings.catalogDir ?? process.cwd(), given);
  const options: LlamaCppOptions = {
    modelPath,
    contextSize: reader.int('contextSize', LLAMACPP_LIMITS.contextSize, 0) || null,
    sequences: reader.int('sequences', LLAMACPP_LIMITS.sequences, LLAMACPP_LIMITS.sequences.default),
    threads: reader.int('threads', LLAMACPP_LIMITS.threads, 0),
    gpuLayers: reader.int('gpuLayers', LLAMACPP_LIMITS.gpuLayers, 0),
    batchSize: reader.int('batchSize', LLAMACPP_LIMITS.batchSize, 0) || null,
  };
  if (given !== '') {
    // Start-up only: the factory is synchronous, and a missing model must stop the worker before it registers.
    const stat = statSync(modelPath, { throwIfNoEntry: false });
    if (stat === undefined) reader.problem(`backend.modelPath: no GGUF file at ${modelPath}`);
    else if (!stat.isFile()) reader.problem(`backend.modelPath: ${modelPath} is not a file`);
  }
  reader.finish();
  return options;
}
