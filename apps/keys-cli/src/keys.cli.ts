import { parseArgs } from 'node:util';
import type { Redis } from 'ioredis';
import {
  CreateKeyDto,
  type BudgetDto,
  CreateTeamDto,
  KeyStore,
  PRIORITY_TIERS,
  TeamStore,
  UpdateKeyDto,
  UpdateTeamDto,
  UsageReader,
  withBudget,
} from '@mgw/access';
import { BATCHES_USAGE } from './batches.usage';
import { GatewayError, TENANT_WEIGHT_MAX, TENANT_WEIGHT_MIN, validateDto } from '@mgw/contracts';

export const USAGE = `Usage: npm run keys -- <command> [options]

  create --name NAME [--models a,b] [--rpm N] [--tpm N] [--max-concurrent N]
         [--priority high|normal|low] [--weight 1-100] [--expires-at UNIX_SECONDS] [--team TEAM_ID]
         [BUDGET]     issue a key; prints it with its secret (shown only this once)
  list                list keys (never their secrets)
  show ID             one key
  update ID [--name NAME] [--models a,b|none] [--rpm N|none] [--tpm N|none]
         [--max-concurrent N|none] [--priority TIER] [--weight 1-100] [--expires-at S|none]
         [--team TEAM_ID|none] [--disable|--enable] [BUDGET]
                      change a key; takes effect on every gateway within a second
  revoke ID           revoke a key for good
  usage [--key ID] [--team TEAM_ID] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--group-by team,key,model,day]
                      usage and cost per key (and its team), model and UTC day (default: today)
  team create --name NAME [--models a,b] [--rpm N] [--tpm N] [--max-concurrent N]
         [--priority TIER] [--weight 1-100] [BUDGET]
                      a team: its limits hold for all its keys together (docs/teams.md)
  team list | team show ID
  team update ID [--name NAME] [--models a,b|none] [--rpm N|none] [--tpm N|none]
         [--max-concurrent N|none] [--priority TIER] [--weight 1-100] [BUDGET]
  team delete ID      refused while the team has live keys
  team token ID [--name NAME]
                      a team admin token (its team's keys only); its secret is shown only this once

  BUDGET: --budget-period day|month|total [--budget-spend AMOUNT] [--budget-tokens N]
         [--soft-threshold 0-1]   sets the whole budget (docs/budgets.md); --budget-period none clears it.
         A spend limit is in the currency of the catalog at CATALOG_PATH (default deploy/catalog.json).

${BATCHES_USAGE}

Reads REDIS_URL and KEY_PREFIX like the gateway (batches: the gateway's URL instead). Prints JSON.`;

/** A mistake in how the CLI was called (exit 2), as opposed to a refusal of the store (exit 1). */
export class CliUsageError extends Error {}

const OPTIONS = {
  name: { type: 'string' },
  models: { type: 'string' },
  rpm: { type: 'string' },
  tpm: { type: 'string' },
  'max-concurrent': { type: 'string' },
  priority: { type: 'string' },
  weight: { type: 'string' },
  'expires-at': { type: 'string' },
  team: { type: 'string' },
  disable: { type: 'boolean' },
  enable: { type: 'boolean' },
  key: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  'group-by': { type: 'string' },
  'budget-spend': { type: 'string' },
  'budget-tokens': { type: 'string' },
  'budget-period': { type: 'string' },
  'soft-threshold': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** What the CLI needs of the deployment besides Redis: the catalog's currency (null: no model has pricing). */
export interface CliContext {
  currency: () => Promise<string | null>;
}

const NO_CATALOG: CliContext = { currency: () => Promise.resolve(null) };

const BUDGET_OPTIONS = ['budget-spend', 'budget-tokens', 'budget-period', 'soft-threshold'] as const;

/**
 * The `budget` of a key's or team's body from the BUDGET options: absent when none is given, null for
 * `--budget-period none`; the API's checks (and their messages) then apply to it as to a request's.
 */
function budgetOf(values: Values): Record<string, unknown> | null | undefined {
  if (BUDGET_OPTIONS.every((option) => values[option] === undefined)) return undefined;
  const period = values['budget-period'];
  if (period === undefined) throw new CliUsageError('--budget-period is needed to set a budget');
  if (period === 'none') {
    if (BUDGET_OPTIONS.some((option) => option !== 'budget-period' && values[option] !== undefined)) {
      throw new CliUsageError('--budget-period none clears the budget: give no other budget option');
    }
    return null;
  }
  const number = (option: (typeof BUDGET_OPTIONS)[number], pattern: RegExp, what: string) => {
    const raw = values[option];
    if (raw === undefined) return undefined;
    if (!pattern.test(raw)) throw new CliUsageError(`--${option} must be ${what}`);
    return Number(raw);
  };
  const budget: Record<string, unknown> = { period };
  const spend = number('budget-spend', /^\d+(\.\d+)?$/, 'a decimal amount (12.5)');
  const tokens = number('budget-tokens', /^\d+$/, 'a whole number');
  const soft = number('soft-threshold', /^(0(\.\d+)?|1(\.0+)?|\.\d+)$/, 'a share from 0 to 1 (0.8)');
  if (spend !== undefined) budget.spend = spend;
  if (tokens !== undefined) budget.tokens = tokens;
  if (soft !== undefined) budget.soft_threshold = soft;
  return budget;
}

/** `settings` with the BUDGET options' budget, checked like the API's and in the catalog's currency. */
async function budgeted<D extends { budget?: BudgetDto | null }>(
  dto: new () => D,
  settings: Record<string, unknown>,
  values: Values,
  context: CliContext,
) {
  const budget = budgetOf(values);
  const currency = budget?.spend === undefined ? null : await context.currency();
  if (budget && budget.spend !== undefined) {
    if (currency === null) {
      throw new Error(
        '--budget-spend: no model of the catalog has pricing, so nothing costs anything to limit',
      );
    }
    budget.currency = currency;
  }
  return withBudget(validateDto(dto, budget === undefined ? settings : { ...settings, budget }), currency);
}

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

/** `none` clears a setting (update only); numbers must be plain integers. */
function intOption(
  values: Values,
  name: 'rpm' | 'tpm' | 'max-concurrent' | 'expires-at',
): number | null | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  if (raw === 'none') return null;
  if (!/^\d+$/.test(raw)) throw new CliUsageError(`--${name} must be a whole number (or none)`);
  return Number(raw);
}

function settingsOf(values: Values): Record<string, unknown> {
  const settings: Record<string, unknown> = {};
  if (values.name !== undefined) settings.name = values.name;
  if (values.models !== undefined) {
    settings.models =
      values.models === 'none'
        ? null
        : values.models
            .split(',')
            .map((m) => m.trim())
            .filter((m) => m.length > 0);
  }
  for (const [option, field] of [
    ['rpm', 'rpm'],
    ['tpm', 'tpm'],
    ['max-concurrent', 'max_concurrent'],
    ['expires-at', 'expires_at'],
  ] as const) {
    const value = intOption(values, option);
    if (value !== undefined) settings[field] = value;
  }
  if (values.priority !== undefined) {
    if (!(PRIORITY_TIERS as readonly string[]).includes(values.priority)) {
      throw new CliUsageError(`--priority must be one of ${PRIORITY_TIERS.join(', ')}`);
    }
    settings.priority = values.priority;
  }
  if (values.weight !== undefined) {
    const weight = Number(values.weight);
    if (!/^\d+$/.test(values.weight) || weight < TENANT_WEIGHT_MIN || weight > TENANT_WEIGHT_MAX) {
      throw new CliUsageError(
        `--weight must be a whole number from ${TENANT_WEIGHT_MIN} to ${TENANT_WEIGHT_MAX}`,
      );
    }
    settings.weight = weight;
  }
  if (values.team !== undefined) settings.team_id = values.team === 'none' ? null : values.team;
  return settings;
}

/** A team's settings: a key's, less what only keys have. */
function teamSettingsOf(values: Values): Record<string, unknown> {
  for (const option of [
    'expires-at',
    'team',
    'disable',
    'enable',
    'key',
    'from',
    'to',
    'group-by',
  ] as const) {
    if (values[option] !== undefined) throw new CliUsageError(`--${option} is not a setting of a team`);
  }
  return settingsOf(values);
}

async function runTeamCommand(
  rest: string[],
  values: Values,
  store: TeamStore,
  context: CliContext,
): Promise<unknown> {
  const [command, ...ids] = rest;
  switch (command) {
    case 'create':
      if (ids.length > 0) throw new CliUsageError('team create takes no positional arguments');
      return store.create(await budgeted(CreateTeamDto, teamSettingsOf(values), values, context));
    case 'list':
      return { object: 'list', data: await store.list() };
    case 'show':
      return store.get(onlyId(ids, 'team show'));
    case 'update': {
      const id = onlyId(ids, 'team update');
      const change = teamSettingsOf(values);
      if (Object.keys(change).length === 0 && budgetOf(values) === undefined)
        throw new CliUsageError('team update needs at least one setting to change');
      return store.update(id, await budgeted(UpdateTeamDto, change, values, context));
    }
    case 'delete':
      return { ...(await store.delete(onlyId(ids, 'team delete'))), deleted: true };
    case 'token':
      return store.createToken(onlyId(ids, 'team token'), values.name);
    default:
      throw new CliUsageError(`unknown team command "${command ?? ''}"`);
  }
}

function onlyId(positionals: string[], command: string): string {
  if (positionals.length !== 1) throw new CliUsageError(`${command} takes exactly one id`);
  return positionals[0]!;
}

/** Runs one CLI command against the store; returns what to print. */
export async function runKeysCommand(
  argv: string[],
  redis: Redis,
  namespace: string,
  context: CliContext = NO_CATALOG,
): Promise<unknown> {
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new CliUsageError((error as Error).message);
  }
  const { values } = parsed;
  const [command, ...rest] = parsed.positionals;
  if (values.help || command === undefined) throw new CliUsageError('');
  const store = new KeyStore(redis, namespace);
  switch (command) {
    case 'create': {
      if (rest.length > 0) throw new CliUsageError('create takes no positional arguments');
      return store.create(await budgeted(CreateKeyDto, settingsOf(values), values, context));
    }
    case 'list':
      return { object: 'list', data: await store.list() };
    case 'show':
      return store.get(onlyId(rest, 'show'));
    case 'update': {
      const id = onlyId(rest, 'update');
      if (values.disable && values.enable)
        throw new CliUsageError('--disable and --enable exclude each other');
      const change = settingsOf(values);
      if (values.disable) change.disabled = true;
      if (values.enable) change.disabled = false;
      if (Object.keys(change).length === 0 && budgetOf(values) === undefined)
        throw new CliUsageError('update needs at least one setting to change');
      return store.update(id, await budgeted(UpdateKeyDto, change, values, context));
    }
    case 'revoke':
      return { ...(await store.revoke(onlyId(rest, 'revoke'))), deleted: true };
    case 'team':
      return runTeamCommand(rest, values, new TeamStore(redis, namespace), context);
    case 'usage': {
      if (rest.length > 0) throw new CliUsageError('usage takes no positional arguments');
      const query = {
        key: values.key,
        team: values.team,
        from: values.from,
        to: values.to,
        group_by: values['group-by'],
      };
      // Costs without their currency rather than no report when the catalog cannot be read here.
      const currency = await context.currency().catch(() => null);
      return new UsageReader(redis, namespace).report(query, currency);
    }
    default:
      throw new CliUsageError(`unknown command "${command}"`);
  }
}

/** The message of a refusal from the store or the DTO checks, without a stack. */
export function describeFailure(error: unknown): string {
  return error instanceof GatewayError
    ? error.message
    : error instanceof Error
      ? error.message
      : String(error);
}
