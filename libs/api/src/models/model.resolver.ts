import { Inject, Injectable } from '@nestjs/common';
import { allowsModel, type Principal } from '@mgw/access';
import { GatewayError, modelTypeOf, type ModelEntry, type ModelKind } from '@mgw/contracts';
import { ModelDirectory } from '@mgw/registry';

/** A model a request may be queued for; `startWithinMs` is set when no worker runs it yet. */
export interface ResolvedModel {
  model: ModelEntry;
  /** Scale-to-zero model without a live worker: how long the job may wait for one to start. */
  startWithinMs?: number;
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
    // A key scoped away from a model is told the same as for a model that does not exist.
    if (!allowsModel(principal, id)) throw GatewayError.modelNotFound(id);
    const lookup = await this.models.lookup(id);
    if (lookup.state === 'unknown') throw GatewayError.modelNotFound(id);
    const expected = modelTypeOf(kind);
    if (lookup.model.type !== expected) throw GatewayError.wrongModelType(id, expected, lookup.model.type);
    if (lookup.state === 'live') return { model: lookup.model };
    const scaleToZero = lookup.model.scaleToZero;
    if (!scaleToZero) throw GatewayError.modelUnavailable(id);
    return { model: lookup.model, startWithinMs: scaleToZero.maxWaitMs };
  }
}
