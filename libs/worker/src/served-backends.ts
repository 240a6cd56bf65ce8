import type { LoggerService } from '@nestjs/common';
import type { CatalogModel } from '@mgw/config';
import type { ModelKind } from '@mgw/contracts';
import {
  createChatBackend,
  createEmbeddingBackend,
  createImageBackend,
  type BackendSettings,
  type ChatBackend,
  type EmbeddingBackend,
  type ImageBackend,
} from '@mgw/inference';

/** A served model with its backend, typed by kind so a chat processor never gets an image backend. */
export type ServedBackend =
  | { kind: 'chat'; model: CatalogModel; backend: ChatBackend }
  | { kind: 'image'; model: CatalogModel; backend: ImageBackend }
  | { kind: 'embedding'; model: CatalogModel; backend: EmbeddingBackend };

/**
 * The owner of the served models' backends: built from their catalog entries (a bad entry fails the start
 * with a ConfigError), loaded before the worker takes a job, closed at shutdown.
 */
export class ServedBackends {
  constructor(
    readonly all: readonly ServedBackend[],
    private readonly logger: LoggerService,
  ) {}

  static create(
    kind: ModelKind,
    served: CatalogModel[],
    settings: BackendSettings,
    logger: LoggerService,
  ): ServedBackends {
    const all = served.map((model): ServedBackend => {
      switch (kind) {
        case 'chat':
          return { kind, model, backend: createChatBackend(model, settings) };
        case 'image':
          return { kind, model, backend: createImageBackend(model, settings) };
        case 'embedding':
          return { kind, model, backend: createEmbeddingBackend(model, settings) };
      }
    });
    return new ServedBackends(all, logger);
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
