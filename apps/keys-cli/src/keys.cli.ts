import { parseArgs } from 'node:util';
import type { Redis } from 'ioredis';
import {
  CreateKeyDto,
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
                      issue a key; prints it with its secret (shown only this once)
  list                list keys (never their secrets)
  show ID             one key
  update ID [--name NAME] [--models a,b|none] [--rpm N|none] [--tpm N|none]
         [--max-concurrent N|none] [--priority TIER] [--weight 1-100] [--expires-at S|none]
         [--team TEAM_ID|none] [--disable|--enable]
                      change a key; takes effect on every gateway within a second
  revoke ID           revoke a key for good
  usage [--key ID] [--from YYYY-MM-DD] [--to YYYY-MM-DD]
                      usage per key, model and UTC day (default: today)
  team create --name NAME [--models a,b] [--rpm N] [--tpm N] [--max-concurrent N]
         [--priority TIER] [--weight 1-100]
                      a team: its limits hold for all its keys together (docs/teams.md)
  team list | team show ID
  team update ID [--name NAME] [--models a,b|none] [--rpm N|none] [--tpm N|none]
         [--max-concurrent N|none] [--priority TIER] [--weight 1-100]
  team delete ID      refused while the team has live keys
  team token ID [--name NAME]
                      a team admin token (its team's keys only); its secret is shown only this once

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
  help: { type: 'boolean', short: 'h' },
} as const;

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
  for (const option of ['expires-at', 'team', 'disable', 'enable', 'key', 'from', 'to'] as const) {
    if (values[option] !== undefined) throw new CliUsageError(`--${option} is not a setting of a team`);
  }
  return settingsOf(values);
}

async function runTeamCommand(rest: string[], values: Values, store: TeamStore): Promise<unknown> {
  const [command, ...ids] = rest;
  switch (command) {
    case 'create':
      if (ids.length > 0) throw new CliUsageError('team create takes no positional arguments');
      return store.create(withBudget(validateDto(CreateTeamDto, teamSettingsOf(values)), null));
    case 'list':
      return { object: 'list', data: await store.list() };
    case 'show':
      return store.get(onlyId(ids, 'team show'));
    case 'update': {
      const id = onlyId(ids, 'team update');
      const change = teamSettingsOf(values);
      if (Object.keys(change).length === 0)
        throw new CliUsageError('team update needs at least one setting to change');
      return store.update(id, withBudget(validateDto(UpdateTeamDto, change), null));
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
export async function runKeysCommand(argv: string[], redis: Redis, namespace: string): Promise<unknown> {
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
      return store.create(withBudget(validateDto(CreateKeyDto, settingsOf(values)), null));
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
      if (Object.keys(change).length === 0)
        throw new CliUsageError('update needs at least one setting to change');
      return store.update(id, withBudget(validateDto(UpdateKeyDto, change), null));
    }
    case 'revoke':
      return { ...(await store.revoke(onlyId(rest, 'revoke'))), deleted: true };
    case 'team':
      return runTeamCommand(rest, values, new TeamStore(redis, namespace));
    case 'usage':
      if (rest.length > 0) throw new CliUsageError('usage takes no positional arguments');
      return new UsageReader(redis, namespace).report({ key: values.key, from: values.from, to: values.to });
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
