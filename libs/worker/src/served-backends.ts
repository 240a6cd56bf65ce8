import { Inject, Injectable, type LoggerService } from '@nestjs/common';
import type { CatalogModel } from '@mgw/config';
import type { ModelKind } from '@mgw/contracts';
import type { BackendSettings, ChatBackend, EmbeddingBackend, ImageBackend } from '@mgw/inference';
import {
  checkBackendOf,
  createChatBackend,
  createEmbeddingBackend,
  createImageBackend,
} from './backend.factory';
import { BACKEND_SETTINGS, SERVED_MODELS, WORKER_KIND, WORKER_LOGGER } from './worker.tokens';

/** A served model with its backend, typed by kind so a chat processor never gets an image backend. */
export type ServedBackend =
  | { kind: 'chat'; model: CatalogModel; backend: ChatBackend }
  | { kind: 'image'; model: CatalogModel; backend: ImageBackend }
  | { kind: 'embedding'; model: CatalogModel; backend: EmbeddingBackend };

/**
 * The owner of the served models' backends: built from their catalog entries (checked before Nest starts, see
 * `check`), loaded before the worker takes a job, closed at shutdown.
 */
@Injectable()
export class ServedBackends {
  readonly all: readonly ServedBackend[];

  constructor(
    @Inject(WORKER_KIND) kind: ModelKind,
    @Inject(SERVED_MODELS) served: CatalogModel[],
    @Inject(BACKEND_SETTINGS) settings: BackendSettings,
    @Inject(WORKER_LOGGER) private readonly logger: LoggerService,
  ) {
    this.all = served.map((model): ServedBackend => {
      switch (kind) {
        case 'chat':
          return { kind, model, backend: createChatBackend(model, settings) };
        case 'image':
          return { kind, model, backend: createImageBackend(model, settings) };
        case 'embedding':
          return { kind, model, backend: createEmbeddingBackend(model, settings) };
      }
    });
  }

  /** Throws the ConfigError of a served model whose backend cannot be built, building nothing. */
  static check(kind: ModelKind, served: CatalogModel[], settings: BackendSettings): void {
    for (const model of served) checkBackendOf(kind, model, settings);
  }

  chat(model: string): ChatBackend {
    const served = this.all.find((s) => s.model.id === model);
    if (served?.kind !== 'chat') throw new Error(`model ${model} is not a served chat model`);
    return served.backend;
  }

  image(model: string): ImageBackend {
    const served = this.all.find((s) => s.model.id === model);
    if (served?.kind !== 'image') throw new Error(`model ${model} is not a served image model`);
    return served.backend;
  }

  embedding(model: string): { model: CatalogModel; backend: EmbeddingBackend } {
    const served = this.all.find((s) => s.model.id === model);
    if (served?.kind !== 'embedding') throw new Error(`model ${model} is not a served embedding model`);
    return served;
  }

  /**
   * Loads what backends load at start (model weights), all before the worker takes a job or registers:
   * the registry must never list a model this process cannot answer yet.
   */
  async load(): Promise<void> {
    await Promise.all(
      this.all.map(async ({ model, backend }) => {
        if (backend.load === undefined) return;
        const startedAt = Date.now();
        await backend.load();
        const detail = backend.describe?.();
        this.logger.log(
          `model ${model.id} loaded in ${Date.now() - startedAt} ms${detail ? ` (${detail})` : ''}`,
        );
      }),
    );
  }

  async close(): Promise<void> {
    await Promise.all(this.all.map(({ backend }) => backend.close()));
  }
}
