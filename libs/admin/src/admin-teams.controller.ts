import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Req } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import {
  CreateTeamDto,
  CreateTeamTokenDto,
  TeamStore,
  UpdateTeamDto,
  withBudget,
  type CreatedTeamToken,
  type TeamTokenView,
  type TeamView,
} from '@mgw/access';
import { ApiErrors, ApiJson, ApiJsonBody, schemaRef } from '@mgw/api-docs';
import { GatewayError } from '@mgw/contracts';
import { adminActorOf, Auth, DtoValidationPipe } from '@mgw/http';
import { ModelDirectory } from '@mgw/registry';
import { currencyFor } from './catalog-currency';

interface List<T> {
  object: 'list';
  data: T[];
}

const teamId = ApiParam({ name: 'id', description: 'The team id (`team_` and 24 hex digits).' });
const listOf = (item: string) => ({
  type: 'object',
  properties: { object: { const: 'list' }, data: { type: 'array', items: schemaRef(item) } },
  required: ['object', 'data'],
});

/**
 * Teams, by the operator: their limits (for all their keys together), scope, priority and fair-share weight,
 * and their admin tokens. A team's admin token reads its own team here and nothing else.
 */
@Controller('admin/teams')
@Auth('admin')
@ApiTags('Admin')
@ApiErrors(401, 403, 404)
export class AdminTeamsController {
  constructor(
    @Inject(TeamStore) private readonly teams: TeamStore,
    @Inject(ModelDirectory) private readonly directory: ModelDirectory,
  ) {}

  @Post()
  @HttpCode(201)
  @ApiOperation({ operationId: 'createTeam', summary: 'Create a team' })
  @ApiJsonBody('CreateTeamRequest', {
    limited: { summary: 'A team of keys', value: { name: 'search', rpm: 600, max_concurrent: 8 } },
  })
  @ApiJson(201, 'Team', 'The team.')
  @ApiErrors(400, 413, 415)
  async create(@Body(new DtoValidationPipe(CreateTeamDto)) body: CreateTeamDto): Promise<TeamView> {
    return this.teams.create(withBudget(body, await currencyFor(body, this.directory)));
  }

  @Get()
  @ApiOperation({ operationId: 'listTeams', summary: 'List teams' })
  @ApiJson(200, listOf('Team'), 'Every team.')
  async list(): Promise<List<TeamView>> {
    return { object: 'list', data: await this.teams.list() };
  }

  @Get(':id')
  @Auth('team-admin')
  @ApiOperation({ operationId: 'retrieveTeam', summary: 'Retrieve a team' })
  @teamId
  @ApiJson(200, 'Team', 'The team.')
  show(@Req() request: FastifyRequest, @Param('id') id: string): Promise<TeamView> {
    const actor = adminActorOf(request);
    if (actor.kind === 'team' && actor.teamId !== id) {
      throw new GatewayError(404, 'invalid_request_error', 'team_not_found', `No team with id ${id}.`, 'id');
    }
    return this.teams.get(id);
  }

  @Patch(':id')
  @ApiOperation({
    operationId: 'updateTeam',
    summary: 'Update a team',
    description: 'Takes effect for its keys on every gateway replica at once.',
  })
  @teamId
  @ApiJsonBody('UpdateTeamRequest', { limit: { summary: 'Limit a team', value: { rpm: 120 } } })
  @ApiJson(200, 'Team', 'The team as updated.')
  @ApiErrors(400, 413, 415)
  async update(
    @Param('id') id: string,
    @Body(new DtoValidationPipe(UpdateTeamDto)) body: UpdateTeamDto,
  ): Promise<TeamView> {
    return this.teams.update(id, withBudget(body, await currencyFor(body, this.directory)));
  }

  @Delete(':id')
  @ApiOperation({
    operationId: 'deleteTeam',
    summary: 'Delete a team',
    description: 'Refused (409 `team_not_empty`) while it has live keys: move or revoke them first.',
  })
  @teamId
  @ApiJson(
    200,
    {
      allOf: [
        schemaRef('Team'),
        { type: 'object', properties: { deleted: { const: true } }, required: ['deleted'] },
      ],
    },
    'The deleted team.',
  )
  @ApiErrors(409)
  async delete(@Param('id') id: string): Promise<TeamView & { deleted: true }> {
    return { ...(await this.teams.delete(id)), deleted: true };
  }

  @Post(':id/tokens')
  @HttpCode(201)
  @ApiOperation({
    operationId: 'createTeamToken',
    summary: "Create a team's admin token",
    description:
      "It manages the team's keys and reads the team, nothing else. The secret is in this answer only.",
  })
  @teamId
  @ApiJsonBody('CreateTeamTokenRequest', { named: { summary: 'A named token', value: { name: 'on-call' } } })
  @ApiJson(201, 'CreatedTeamAdminToken', 'The token, with its secret.')
  @ApiErrors(400, 413, 415)
  createToken(
    @Param('id') id: string,
    @Body(new DtoValidationPipe(CreateTeamTokenDto)) body: CreateTeamTokenDto,
  ): Promise<CreatedTeamToken> {
    return this.teams.createToken(id, body.name);
  }

  @Get(':id/tokens')
  @ApiOperation({ operationId: 'listTeamTokens', summary: "List a team's admin tokens" })
  @teamId
  @ApiJson(200, listOf('TeamAdminToken'), 'Its tokens (never their secrets).')
  async listTokens(@Param('id') id: string): Promise<List<TeamTokenView>> {
    return { object: 'list', data: await this.teams.listTokens(id) };
  }

  @Delete(':id/tokens/:tokenId')
  @ApiOperation({ operationId: 'revokeTeamToken', summary: "Revoke a team's admin token" })
  @teamId
  @ApiParam({ name: 'tokenId', description: 'The token id (`tat_` and 24 hex digits).' })
  @ApiJson(
    200,
    {
      allOf: [
        schemaRef('TeamAdminToken'),
        { type: 'object', properties: { deleted: { const: true } }, required: ['deleted'] },
      ],
    },
    'The revoked token.',
  )
  async revokeToken(
    @Param('id') id: string,
    @Param('tokenId') tokenId: string,
  ): Promise<TeamTokenView & { deleted: true }> {
    return { ...(await this.teams.revokeToken(id, tokenId)), deleted: true };
  }
}
