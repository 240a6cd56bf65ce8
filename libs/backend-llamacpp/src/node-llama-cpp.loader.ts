import { pathToFileURL } from 'node:url';
import type * as NodeLlamaCpp from 'node-llama-cpp';
import type { ChatWrapper, Llama, LlamaGrammar, LlamaModel, LlamaText } from 'node-llama-cpp';
import { ConfigError } from '@mgw/config';
import { BoundedCache } from '@mgw/inference';
import type {
  FunctionCallSyntax,
  GeneratedToken,
  LlamaSequence,
  LoadedLlamaModel,
  ModelGrammar,
  RenderedPrompt,
  TemplateMarkers,
} from './loaded-model';
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
 * Compiled grammars kept per model, so a client that resends the same tools or schema (an agent, every
 * turn) compiles them once. Compiling is a pure function of the key, so a failure is remembered too.
 */
const GRAMMAR_CACHE = { entries: 32, maxKeyLength: 64 * 1024 };

class NativeGrammar implements ModelGrammar {
  constructor(
    readonly label: string,
    readonly grammar: LlamaGrammar,
  ) {}
}

/** Splits template markers into plain texts and special-token sequences, as they are matched differently. */
function markersOf(texts: readonly LlamaText[], model: LlamaModel): TemplateMarkers {
  const markers: TemplateMarkers = { texts: [], tokenSequences: [] };
  for (const text of texts) {
    if (text.values.every((value) => typeof value === 'string')) markers.texts.push(text.toString());
    else markers.tokenSequences.push(text.tokenize(model.tokenizer));
  }
  return markers;
}

/** The wrapper's function-call syntax (see ChatWrapperSettings.functions) as tokens and markers. */
function functionCallSyntaxOf(
  wrapper: ChatWrapper,
  model: LlamaModel,
  { LlamaText }: NodeLlamaCppModule,
): FunctionCallSyntax {
  const { call, parallelism } = wrapper.settings.functions;
  const triggerTexts: string[] = [];
  const triggerTokens: FunctionCallSyntax['triggerTokens'] = [];
  for (const prefix of [call.prefix, ...(call.prefixAlternateMatches ?? [])].map((value) =>
    LlamaText(value),
  )) {
    const special = prefix.values.findIndex((value) => typeof value !== 'string');
    if (special === -1) {
      triggerTexts.push(prefix.toString());
      continue;
    }
    // Text before the special token is usually a line break the model may or may not write; the special
    // token is what reliably opens the call.
    const [token] = LlamaText(prefix.values[special]!).tokenize(model.tokenizer);
    const rest = LlamaText(prefix.values.slice(special + 1)).tokenize(model.tokenizer);
    if (token !== undefined) triggerTokens.push({ token, rest });
  }
  return {
    triggerTexts,
    triggerTokens,
    prefix: LlamaText(parallelism?.call.sectionPrefix ?? '', call.prefix).tokenize(model.tokenizer),
    paramsPrefix: (name) =>
      LlamaText(call.paramsPrefix)
        .mapValues((value) =>
          typeof value === 'string' ? value.replaceAll('{{functionName}}', name) : value,
        )
        .tokenize(model.tokenizer),
  };
}

/** A GBNF string literal. */
const gbnfLiteral = (text: string) => JSON.stringify(text);

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
    const nodeLlamaCpp = await importNodeLlamaCpp();
    const { resolveChatWrapper, LlamaGrammarEvaluationState } = nodeLlamaCpp;
    const chatWrapper = resolveChatWrapper(model);
    const grammars = new BoundedCache<Promise<NativeGrammar>>(
      GRAMMAR_CACHE.entries,
      GRAMMAR_CACHE.maxKeyLength,
    );
    const compiled = (key: string, compile: () => Promise<LlamaGrammar>) =>
      grammars.getOrCompute(key, () => compile().then((grammar) => new NativeGrammar(key, grammar)));
    const compute = llama.gpu === false ? 'CPU' : `${llama.gpu}, ${gpuLayers} GPU layers`;
    return {
      contextSize: context.contextSize,
      description: `${modelPath}: context ${context.contextSize} × ${sequences} sequences, chat wrapper ${chatWrapper.wrapperName}, ${compute}`,
      renderPrompt(history, functions): RenderedPrompt {
        const state = chatWrapper.generateContextState({
          chatHistory: history,
          ...(functions !== undefined ? { availableFunctions: functions, documentFunctionParams: true } : {}),
        });
        const stops = markersOf(state.stopGenerationTriggers, model);
        return {
          tokens: state.contextText.tokenize(model.tokenizer),
          stopTexts: stops.texts,
          stopTokenSequences: stops.tokenSequences,
        };
      },
      functionCallSyntax: functionCallSyntaxOf(chatWrapper, model, nodeLlamaCpp),
      detokenize: (tokens, previous) => model.detokenize(tokens, false, previous),
      tokenize: (text) => model.tokenize(text, false),
      tokenText: (token) => model.detokenize([token], true),
      jsonGrammar: (schema) =>
        schema === null
          ? compiled('any JSON object', () => llama.getGrammarFor('json'))
          : compiled(JSON.stringify(schema), () =>
              // The generic parameter only infers literal schemas; this one is already a GbnfJsonSchema.
              llama.createGrammarForJsonSchema(schema as Parameters<Llama['createGrammarForJsonSchema']>[0]),
            ),
      choiceGrammar: (texts) =>
        compiled(`one of ${JSON.stringify(texts)}`, () =>
          llama.createGrammar({ grammar: `root ::= ${texts.map(gbnfLiteral).join(' | ')}` }),
        ),
      getSequence(): LlamaSequence {
        const sequence = context.getSequence();
        return {
          async *evaluate(tokens, { grammar, probabilities, ...options }): AsyncGenerator<GeneratedToken> {
            if (grammar !== undefined && !(grammar instanceof NativeGrammar)) {
              throw new Error(`grammar "${grammar.label}" was not compiled for this model`);
            }
            const grammarEvaluationState =
              grammar === undefined
                ? undefined
                : new LlamaGrammarEvaluationState({ model, grammar: grammar.grammar });
            const evaluateOptions = {
              ...options,
              ...(grammarEvaluationState ? { grammarEvaluationState } : {}),
            };
            if (probabilities !== true) {
              for await (const token of sequence.evaluate(tokens, evaluateOptions)) yield { token };
              return;
            }
            yield* sequence.evaluateWithMetadata(tokens, { probabilities: true }, evaluateOptions);
          },
          get contextTokens() {
            return sequence.contextTokens;
          },
          async keepPrefixOf(tokens) {
            // Without shifting: a shift re-evaluates tokens, and the caller evaluates what differs anyway.
            await sequence.adaptStateToTokens([...tokens], false);
            return sequence.nextTokenIndex;
          },
          dispose: () => Promise.resolve(sequence.dispose()),
        };
      },
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
