import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, type CatalogModel } from '@mgw/config';
import { catalogModel } from '@mgw/testing';
import type { BackendSettings } from '@mgw/inference';
import { parseLlamaCppOptions } from './llamacpp.options';

let dir: string;
let settings: BackendSettings;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mgw-llamacpp-options-'));
  await mkdir(join(dir, 'models'));
  await writeFile(join(dir, 'models', 'm.gguf'), 'GGUF');
  settings = {
    simChatTtftMs: 0,
    simChatTokensPerS: 0,
    simImageLatencyMs: 0,
    concurrency: 1,
    environment: new Map(),
    catalogDir: dir,
  };
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const model = (backend: Record<string, unknown>): CatalogModel =>
  catalogModel('chat', { kind: 'llamacpp', ...backend }, 'local-llama');

function problemsOf(parse: () => unknown): string[] {
  try {
    parse();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('llamacpp options', () => {
  it('resolves a relative modelPath against the catalog directory and applies the defaults', () => {
    expect(parseLlamaCppOptions(model({ modelPath: 'models/m.gguf' }), settings)).toEqual({
      modelPath: join(dir, 'models', 'm.gguf'),
      contextSize: null,
      sequences: 4,
      threads: 0,
      gpuLayers: 0,
      batchSize: null,
    });
  });

  it('keeps an absolute modelPath and reads every option', () => {
    const modelPath = join(dir, 'models', 'm.gguf');
    expect(
      parseLlamaCppOptions(
        model({ modelPath, contextSize: 2048, sequences: 8, threads: 2, gpuLayers: 99, batchSize: 256 }),
        { ...settings, catalogDir: '/elsewhere' },
      ),
    ).toEqual({ modelPath, contextSize: 2048, sequences: 8, threads: 2, gpuLayers: 99, batchSize: 256 });
  });

  it('refuses a missing GGUF file, naming the model, the field and the resolved path', () => {
    expect(
      problemsOf(() => parseLlamaCppOptions(model({ modelPath: 'models/nope.gguf' }), settings)),
    ).toEqual([
      `catalog model "local-llama": backend.modelPath: no GGUF file at ${join(dir, 'models', 'nope.gguf')}`,
    ]);
  });

  it('refuses a directory as modelPath', () => {
    expect(problemsOf(() => parseLlamaCppOptions(model({ modelPath: 'models' }), settings))).toEqual([
      `catalog model "local-llama": backend.modelPath: ${join(dir, 'models')} is not a file`,
    ]);
  });

  it.each([undefined, '', '  ', 42])('requires modelPath (%p)', (modelPath) => {
    expect(problemsOf(() => parseLlamaCppOptions(model({ modelPath }), settings))).toEqual([
      'catalog model "local-llama": backend.modelPath is required and must be a non-empty string',
    ]);
  });

  it('reports every bad number and unknown option at once', () => {
    const problems = problemsOf(() =>
      parseLlamaCppOptions(
        model({
          modelPath: 'models/m.gguf',
          contextSize: 0,
          sequences: 1.5,
          threads: -1,
          gpuLayers: '10',
          batchSize: 0,
          temperature: 0.2,
        }),
        settings,
      ),
    );
    expect(problems).toEqual([
      'catalog model "local-llama": backend.temperature is not an option of the llamacpp backend (known: modelPath, contextSize, sequences, threads, gpuLayers, batchSize)',
      'catalog model "local-llama": backend.contextSize must be an integer from 64 to 1048576',
      'catalog model "local-llama": backend.sequences must be an integer from 1 to 256',
      'catalog model "local-llama": backend.threads must be an integer from 0 to 1024',
      'catalog model "local-llama": backend.gpuLayers must be an integer from 0 to 100000',
      'catalog model "local-llama": backend.batchSize must be an integer from 1 to 1048576',
    ]);
  });
});
