import { ConfigError, type Catalog, type CatalogModel } from '@mgw/config';
import type { ModelKind } from '@mgw/contracts';

/** The catalog models this worker serves: those named in WORKER_MODELS, or every model of its kind. */
export function selectServedModels(catalog: Catalog, kind: ModelKind, requested: string[]): CatalogModel[] {
  if (requested.length === 0) {
    const all = catalog.models.filter((m) => m.kind === kind);
    if (all.length === 0)
      throw new ConfigError([`catalog ${catalog.path}: declares no ${kind} model for this worker`]);
    return all;
  }
  const problems = requested
    .filter((id, index) => requested.indexOf(id) !== index)
    .map((id) => `WORKER_MODELS: "${id}" is named more than once`);
  const models = requested.flatMap((id) => {
    const model = catalog.models.find((m) => m.id === id);
    if (!model) problems.push(`WORKER_MODELS: "${id}" is not declared in catalog ${catalog.path}`);
    else if (model.kind !== kind)
      problems.push(`WORKER_MODELS: "${id}" is a ${model.kind} model, not a ${kind} model`);
    return model && model.kind === kind ? [model] : [];
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return models;
}
