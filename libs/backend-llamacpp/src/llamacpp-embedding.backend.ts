import type { LlamaEmbeddingContext, LlamaModel, Token } from 'node-llama-cpp';
import { ConfigError, type CatalogModel } from '@mgw/config';
import {
  type BackendSettings,
  type EmbeddingBackend,
  type EmbeddingBatchRequest,
  shorten,
} from '@mgw/inference';
import { parseLlamaCppOptions, type LlamaCppOptions } from './llamacpp.options';
import { acquireLlama, releaseLlama } from './node-llama-cpp.loader';

/**
 * A GGUF embedding model run in-process by llama.cpp, through node-llama-cpp's embedding context: loaded
 * once (`load`), then each batch the worker gathered is embedded input by input on that context (one call
 * at a time, as one context computes). Token-id inputs are taken as the model's own token ids.
 */
export class LlamaCppEmbeddingBackend implements EmbeddingBackend {
  readonly parallelCalls = 1;
  private model: LlamaModel | null = null;
  private context: LlamaEmbeddingContext | null = null;
  private running: Promise<unknown> = Promise.resolve();
  private acquired = false;

  constructor(
    private readonly modelId: string,
    private readonly dimensions: number,
    private readonly options: LlamaCppOptions,
  ) {}

  static fromCatalog(this: void, model: CatalogModel, settings: BackendSettings): LlamaCppEmbeddingBackend {
    return new LlamaCppEmbeddingBackend(
      model.id,
      model.embedding?.dimensions ?? 1,
      parseLlamaCppOptions(model, settings),
    );
  }

  async load(): Promise<void> {
    const { modelPath, gpuLayers, threads, batchSize, contextSize } = this.options;
    const llama = await acquireLlama(gpuLayers > 0);
    this.acquired = true;
    try {
      this.model = await llama.loadModel({ modelPath, gpuLayers });
      this.context = await this.model.createEmbeddingContext({
        ...(contextSize !== null ? { contextSize } : {}),
        ...(threads > 0 ? { threads } : {}),
        ...(batchSize !== null ? { batchSize } : {}),
      });
    } catch (error) {
      await this.close();
      throw new ConfigError([
        `catalog model "${this.modelId}": llama.cpp cannot embed with ${modelPath} (${error instanceof Error ? error.message : String(error)})`,
      ]);
    }
    const size = this.model.embeddingVectorSize;
    if (size < this.dimensions) {
      await this.close();
      throw new ConfigError([
        `catalog model "${this.modelId}": dimensions is ${this.dimensions}, but ${modelPath} gives vectors of ${size}`,
      ]);
    }
  }

  describe(): string {
    return `${this.options.modelPath}: embedding vectors of ${this.model?.embeddingVectorSize ?? '?'}`;
  }

  embed(request: EmbeddingBatchRequest, signal: AbortSignal): Promise<Float32Array[]> {
    // One context computes one input at a time: calls queue behind each other.
    const call = this.running.then(() => this.embedNow(request, signal));
    this.running = call.catch(() => undefined);
    return call;
  }

  private async embedNow(request: EmbeddingBatchRequest, signal: AbortSignal): Promise<Float32Array[]> {
    const context = this.context;
    if (context === null) throw new Error(`llamacpp embedding model ${this.modelId} is not loaded`);
    const vectors: Float32Array[] = [];
    for (const input of request.inputs) {
      signal.throwIfAborted();
      const embedding = await context.getEmbeddingFor(typeof input === 'string' ? input : (input as Token[]));
      vectors.push(shorten(embedding.vector, request.dimensions));
    }
    return vectors;
  }

  async close(): Promise<void> {
    await this.context?.dispose();
    await this.model?.dispose();
    this.context = null;
    this.model = null;
    if (this.acquired) {
      this.acquired = false;
      await releaseLlama(this.options.gpuLayers > 0);
    }
  }
}
