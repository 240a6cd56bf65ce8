import { pathToFileURL } from 'node:url';
import type * as NodeLlamaCpp from 'node-llama-cpp';
import type { Llama, LlamaModel, Token } from 'node-llama-cpp';
import { ConfigError } from '@mgw/config';
import type { LoadedLlamaModel, RenderedPrompt } from './loaded-model';
import { LLAMACPP_LIMITS, type LlamaCppOptions } from './llamacpp.options';

export type NodeLlamaCppModule = typeof NodeLlamaCpp;

/**
 * node-llama-cpp is ESM-only and we compile to CommonJS, where TypeScript rewrites `import()` into
 * `require()`. An `import()` built with Function is left alone by the compiler, so Node loads the package
 * natively as ESM (no reliance on require(esm)). Only a llamacpp backend calls it, when its model loads.
 * jest's CommonJS sandbox cannot run it; the backend is tested with real inference through the built
 * worker (test/llamacpp.e2e-spec.ts).
 */
// eslint-disable-next-line @typescript-eslint/no-implied-eval
const importEsm = new Function('url', 'return import(url)') as (url: string) => Promise<unknown>;

let loading: Promise<NodeLlamaCppModule> | null = null;

export function importNodeLlamaCpp(): Promise<NodeLlamaCppModule> {
  // Resolved here rather than by the Function's import(), whose base for bare specifiers is not our file.
  loading ??= importEsm(pathToFileURL(require.resolve('node-llama-cpp')).href) as Promise<NodeLlamaCppModule>;
  return loading;
}

interface SharedLlama {
  llama: Promise<Llama>;
  users: number;
}

const shared = new Map<'cpu' | 'gpu', SharedLlama>();

/**
 * The llama.cpp runtime, one per process and compute kind, shared by every llamacpp model the worker
 * serves. Only the prebuilt binaries installed with the package are used: never a download or a build at
 * run time (`build: 'never'`, `skipDownload`). CPU-only unless a model offloads layers to a GPU.
 */
export function acquireLlama(gpu: boolean): Promise<Llama> {
  const key = gpu ? 'gpu' : 'cpu';
  let entry = shared.get(key);
  if (entry === undefined) {
    entry = {
      users: 0,
      llama: importNodeLlamaCpp().then(({ getLlama }) =>
        getLlama({
          gpu: gpu ? 'auto' : false,
          build: 'never',
          skipDownload: true,
          usePrebuiltBinaries: true,
          progressLogs: false,
        }),
      ),
    };
    shared.set(key, entry);
    // A failed start must not stick: the next caller tries again rather than inheriting the rejection.
    const failed = entry;
    entry.llama.catch(() => {
      if (shared.get(key) === failed) shared.delete(key);
    });
  }
  entry.users++;
  return entry.llama;
}

/** Gives the runtime back; the last user disposes it. */
export async function releaseLlama(gpu: boolean): Promise<void> {
  const key = gpu ? 'gpu' : 'cpu';
  const entry = shared.get(key);
  if (entry === undefined || --entry.users > 0) return;
  shared.delete(key);
  const llama = await entry.llama.catch(() => null);
  await llama?.dispose();
}

/**
 * Loads a GGUF with node-llama-cpp: the model, one context of `sequences` sequences, and the chat wrapper
 * node-llama-cpp resolves from the model's own chat template (a specialised one when the template is a
 * known format, else the template itself via Jinja). A file llama.cpp cannot read is a catalog error.
 */
export async function loadLlamaModel(modelId: string, options: LlamaCppOptions): Promise<LoadedLlamaModel> {
  const { modelPath, gpuLayers, sequences, threads, batchSize } = options;
  const gpu = gpuLayers > 0;
  const llama = await acquireLlama(gpu);
  let model: LlamaModel;
  try {
    model = await llama.loadModel({ modelPath, gpuLayers });
  } catch (error) {
    await releaseLlama(gpu);
    throw new ConfigError([
      `catalog model "${modelId}": backend.modelPath: llama.cpp cannot load ${modelPath} (${error instanceof Error ? error.message : String(error)})`,
    ]);
  }
  try {
    const context = await model.createContext({
      contextSize:
        options.contextSize ?? Math.min(LLAMACPP_LIMITS.contextSize.default, model.trainContextSize),
      sequences,
      ...(threads > 0 ? { threads } : {}),
      ...(batchSize !== null ? { batchSize } : {}),
    });
    const { resolveChatWrapper } = await importNodeLlamaCpp();
    const chatWrapper = resolveChatWrapper(model);
    const compute = llama.gpu === false ? 'CPU' : `${llama.gpu}, ${gpuLayers} GPU layers`;
    return {
      contextSize: context.contextSize,
      description: `${modelPath}: context ${context.contextSize} × ${sequences} sequences, chat wrapper ${chatWrapper.wrapperName}, ${compute}`,
      renderPrompt(history): RenderedPrompt {
        const state = chatWrapper.generateContextState({ chatHistory: history });
        const stopTexts: string[] = [];
        const stopTokenSequences: Token[][] = [];
        for (const trigger of state.stopGenerationTriggers) {
          if (trigger.values.every((value) => typeof value === 'string')) stopTexts.push(trigger.toString());
          else stopTokenSequences.push(trigger.tokenize(model.tokenizer));
        }
        return { tokens: state.contextText.tokenize(model.tokenizer), stopTexts, stopTokenSequences };
      },
      detokenize: (tokens, previous) => model.detokenize(tokens, false, previous),
      getSequence: () => context.getSequence(),
      async dispose() {
        await context.dispose();
        await model.dispose();
        await releaseLlama(gpu);
      },
    };
  } catch (error) {
    await model.dispose();
    await releaseLlama(gpu);
    throw error;
  }
}
