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

/** Models with at least one live worker; a declared model without workers is not offered. */
@Controller('v1/models')
@Auth('models')
export class ModelsController {
  constructor(@Inject(GatewayRuntime) private readonly runtime: GatewayRuntime) {}

  @Get()
  async list(): Promise<ModelList> {
    const models = await this.runtime.models.listModels();
    return { object: 'list', data: models.filter((m) => m.liveWorkers > 0).map(toModelObject) };
  }

  @Get(':id')
  async retrieve(@Param('id') id: string): Promise<ModelObject> {
    const lookup = await this.runtime.models.lookup(id);
    if (lookup.state !== 'live') throw GatewayError.modelNotFound(id);
    return toModelObject(lookup.model);
  }
}
