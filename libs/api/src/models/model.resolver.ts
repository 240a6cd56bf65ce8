import { Inject, Injectable } from '@nestjs/common';
import { allowsModel, type Principal } from '@mgw/access';
import { GatewayError, modelTypeOf, type ModelEntry, type ModelKind } from '@mgw/contracts';
import { GatewayRuntime } from '../gateway.runtime';

/** Turns a requested model id into a live model of the right kind, or the matching 404/400/503. */
@Injectable()
export class ModelResolver {
  constructor(@Inject(GatewayRuntime) private readonly runtime: GatewayRuntime) {}

  async resolve(id: string, kind: ModelKind, principal: Principal | null = null): Promise<ModelEntry> {
    // A key scoped away from a model is told the same as for a model that does not exist.
    if (!allowsModel(principal, id)) throw GatewayError.modelNotFound(id);
    const lookup = await this.runtime.models.lookup(id);
    if (lookup.state === 'unknown') throw GatewayError.modelNotFound(id);
    const expected = modelTypeOf(kind);
    if (lookup.model.type !== expected) throw GatewayError.wrongModelType(id, expected, lookup.model.type);
    if (lookup.state === 'unavailable') throw GatewayError.modelUnavailable(id);
    return lookup.model;
  }
}
