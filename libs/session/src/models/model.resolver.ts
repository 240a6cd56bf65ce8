import { Inject, Injectable } from '@nestjs/common';
import { allowsModel, type Principal } from '@mgw/access';
import {
  EMBEDDING_MODEL_TYPE,
  GatewayError,
  modelTypeOf,
  type ModelEntry,
  type ModelKind,
  type ModelType,
} from '@mgw/contracts';
import { ModelDirectory } from '@mgw/registry';

/** A model a request may be queued for; `startWithinMs` is set when no worker runs it yet. */
export interface ResolvedModel {
  model: ModelEntry;
  /** Scale-to-zero model without a live worker: how long the job may wait for one to start. */
  startWithinMs?: number;
}

/**
 * A resolution that did not give a model to queue for. `declared` is the model when it exists, is of the
 * right kind and the key may use it, but has no live worker now: its fallbacks may serve instead.
 */
export interface Unresolved {
  error: GatewayError;
  declared: ModelEntry | null;
}

/**
 * Turns a requested model id into a model of the right kind that can take the request, or the matching
 * 404/400/503. A declared model without live workers is refused at once, unless the catalog declares it
 * `scaleToZero`: then the request is queued and waits (bounded) for an autoscaler to start a worker.
 */
@Injectable()
export class ModelResolver {
  constructor(@Inject(ModelDirectory) private readonly models: ModelDirectory) {}

  async resolve(id: string, kind: ModelKind, principal: Principal | null = null): Promise<ResolvedModel> {
    const resolution = await this.attempt(id, kind, principal);
    if ('error' in resolution) throw resolution.error;
    return resolution;
  }

  /** As `resolve`, but a refusal is returned, with the declared model when it only lacks a live worker. */
  async attempt(
    id: string,
    kind: ModelKind,
    principal: Principal | null = null,
  ): Promise<ResolvedModel | Unresolved> {
    // A key scoped away from a model is told the same as for a model that does not exist. An alias is the
    // model it names (the registry answers the model for it): a key may use a model by either name.
    const allowed = allowsModel(principal, id);
    const lookup = await this.models.lookup(id);
    if (lookup.state === 'unknown' || (!allowed && !allowsModel(principal, lookup.model.id))) {
      return { error: GatewayError.modelNotFound(id), declared: null };
    }
    const expected = modelTypeOf(kind);
    if (lookup.model.type !== expected) {
      return { error: wrongModelType(id, kind, expected, lookup.model.type), declared: null };
    }
    if (lookup.state === 'live') return { model: lookup.model };
    const scaleToZero = lookup.model.scaleToZero;
    if (!scaleToZero) return { error: GatewayError.modelUnavailable(id), declared: lookup.model };
    return { model: lookup.model, startWithinMs: scaleToZero.maxWaitMs };
  }
}

/** OpenAI's own words where OpenAI has some (embeddings of a chat model, chat of an embedding model). */
function wrongModelType(id: string, kind: ModelKind, expected: ModelType, actual: ModelType): GatewayError {
  if (kind === 'embedding') return GatewayError.notAnEmbeddingModel();
  if (kind === 'chat' && actual === EMBEDDING_MODEL_TYPE) return GatewayError.notAChatModel();
  return GatewayError.wrongModelType(id, expected, actual);
}
