import { Controller, Get, Inject, Param, Req } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { allowsModel, type Principal } from '@mgw/access';
import {
  capabilitiesOf,
  CHAT_MODEL_TYPE,
  COMMON_CHAT_PARAMETERS,
  EMBEDDING_MODEL_TYPE,
  GatewayError,
  type ModelEntry,
  type ModelList,
  type ModelObject,
} from '@mgw/contracts';
import { ApiErrors, ApiJson, MODEL_LIST_EXAMPLE } from '@mgw/api-docs';
import { ModelDirectory } from '@mgw/registry';
import { Auth, principalOf } from '@mgw/http';
import { fallbacksFor } from '@mgw/session';

function isServable(entry: ModelEntry): boolean {
  return entry.liveWorkers > 0 || entry.scaleToZero !== undefined;
}

/** The model as OpenAI's `model` object, under `id` (its own, or one of its aliases). */
function toModelObject(entry: ModelEntry, id = entry.id): ModelObject {
  return {
    id,
    object: 'model',
    created: entry.created,
    owned_by: entry.owned_by,
    type: entry.type,
    capabilities: capabilitiesOf(entry.type),
    ...(entry.type === CHAT_MODEL_TYPE && {
      supported_parameters: entry.supportedParameters ?? [...COMMON_CHAT_PARAMETERS],
    }),
    ...(entry.type === EMBEDDING_MODEL_TYPE &&
      entry.dimensions !== undefined && { dimensions: entry.dimensions }),
  };
}

/**
 * Models that can take a request now — those with a live worker, scale-to-zero models (queued until one
 * starts), and those a fallback the key may use serves meanwhile — except those the key may not use.
 */
@Controller('v1/models')
@Auth('models')
@ApiTags('Models')
export class ModelsController {
  constructor(@Inject(ModelDirectory) private readonly models: ModelDirectory) {}

  @Get()
  @ApiOperation({
    operationId: 'listModels',
    summary: 'List models',
    description:
      'The models that can take a request now (a live worker, or scale-to-zero), except those the key may not use.',
  })
  @ApiJson(200, 'ModelList', 'The models.', MODEL_LIST_EXAMPLE)
  @ApiErrors(401, 503)
  async list(@Req() request: FastifyRequest): Promise<ModelList> {
    const principal = principalOf(request);
    const models = await this.models.listModels();
    const byId = new Map(models.map((model) => [model.id, model]));
    const servedByFallback = (entry: ModelEntry) =>
      fallbacksFor(entry, principal).some((id) => {
        const fallback = byId.get(id);
        return fallback !== undefined && isServable(fallback);
      });
    // A model's aliases are listed as models of their own, as OpenAI lists its models' other names.
    return {
      object: 'list',
      data: models
        .filter((m) => allowsModel(principal, m.id) && (isServable(m) || servedByFallback(m)))
        .flatMap((m) => [toModelObject(m), ...(m.aliases ?? []).map((alias) => toModelObject(m, alias))]),
    };
  }

  @Get(':id')
  @ApiOperation({ operationId: 'retrieveModel', summary: 'Retrieve a model' })
  @ApiParam({ name: 'id', description: 'The model id.', example: 'sim-chat' })
  @ApiJson(200, 'Model', 'The model.', MODEL_LIST_EXAMPLE.data[0])
  @ApiErrors(401, 404, 503)
  async retrieve(@Req() request: FastifyRequest, @Param('id') id: string): Promise<ModelObject> {
    const principal = principalOf(request);
    const lookup = await this.models.lookup(id);
    // An alias is the model it names: a key scoped to the model sees it under either name.
    if (
      lookup.state === 'unknown' ||
      !(allowsModel(principal, id) || allowsModel(principal, lookup.model.id))
    ) {
      throw GatewayError.modelNotFound(id);
    }
    if (!isServable(lookup.model) && !(await this.servedByFallback(lookup.model, principal))) {
      throw GatewayError.modelNotFound(id);
    }
    return toModelObject(lookup.model, id);
  }

  /** Whether a fallback the key may use takes the model's requests now (see docs/catalog.md, "Fallbacks"). */
  private async servedByFallback(entry: ModelEntry, principal: Principal | null): Promise<boolean> {
    for (const id of fallbacksFor(entry, principal)) {
      const lookup = await this.models.lookup(id);
      if (lookup.state !== 'unknown' && isServable(lookup.model)) return true;
    }
    return false;
  }
}
