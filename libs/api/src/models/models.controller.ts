import { Controller, Get, Inject, Param } from '@nestjs/common';
import {
  capabilitiesOf,
  GatewayError,
  type ModelEntry,
  type ModelList,
  type ModelObject,
} from '@mgw/contracts';
import { Auth } from '../auth/auth-policy.decorator';
import { GatewayRuntime } from '../gateway.runtime';

function isServable(entry: ModelEntry): boolean {
  return entry.liveWorkers > 0 || entry.scaleToZero !== undefined;
}

function toModelObject(entry: ModelEntry): ModelObject {
  return {
    id: entry.id,
    object: 'model',
    created: entry.created,
    owned_by: entry.owned_by,
    type: entry.type,
    capabilities: capabilitiesOf(entry.type),
  };
}

/** Models that can take a request now: those with a live worker, and scale-to-zero models (queued until one starts). */
@Controller('v1/models')
@Auth('models')
export class ModelsController {
  constructor(@Inject(GatewayRuntime) private readonly runtime: GatewayRuntime) {}

  @Get()
  async list(): Promise<ModelList> {
    const models = await this.runtime.models.listModels();
    return { object: 'list', data: models.filter(isServable).map(toModelObject) };
  }

  @Get(':id')
  async retrieve(@Param('id') id: string): Promise<ModelObject> {
    const lookup = await this.runtime.models.lookup(id);
    if (lookup.state === 'unknown' || !isServable(lookup.model)) throw GatewayError.modelNotFound(id);
    return toModelObject(lookup.model);
  }
}
