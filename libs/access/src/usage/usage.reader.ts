import type { Redis } from 'ioredis';
import { decimalOf, GatewayError, KEY_ID_PATTERN, keyLayoutOf, TEAM_ID_PATTERN } from '@mgw/contracts';
import { accessNames, type AccessNames } from '../access.names';
import {
  USAGE_GROUPS,
  type UsageCounts,
  type UsageGroup,
  type UsageReport,
  type UsageRow,
} from '../admin-api.types';
import { DAY_MS, dayOf, daysBetween, parseDay } from './usage.days';

export interface UsageQuery {
  key?: string;
  /** Only the usage recorded under this team (a team admin token's is forced to its own). */
  team?: string;
  from?: string;
  to?: string;
  /** A comma list of `team`, `key`, `model`, `day`; default `key,model,day`. */
  group_by?: string;
}

const MAX_DAYS = 366;
const FIELDS = ['requests', 'prompt_tokens', 'completion_tokens', 'images', 'cost'] as const;
type Field = (typeof FIELDS)[number];
/** A batch line's counts are also kept under these (`usage.lua`). */
const BATCH_PREFIX = 'batch_';
const DEFAULT_GROUPS: UsageGroup[] = ['key', 'model', 'day'];

type Counts = Record<Field, number>;
const zero = (): Counts => ({ requests: 0, prompt_tokens: 0, completion_tokens: 0, images: 0, cost: 0 });

/** The finest unit of usage: a key's model on a day under a team (null: none). Costs in micro-units. */
interface Cell {
  key: string;
  team: string | null;
  model: string;
  day: string;
  counts: Counts;
  batch: Counts;
}

function add(into: Counts, from: Counts, sign = 1): void {
  for (const field of FIELDS) into[field] += sign * from[field];
}

/** Counts with their cost turned from micro-units into the currency. */
function shown(counts: Counts): UsageCounts {
  return { ...counts, cost: Number(decimalOf(counts.cost)) };
}

/** `a,b` → the groups, checked: known names, each once, at least one. */
export function parseGroups(raw: string | undefined): UsageGroup[] {
  if (raw === undefined) return DEFAULT_GROUPS;
  const groups = raw.split(',').map((name) => name.trim());
  const bad = groups.find((name) => !(USAGE_GROUPS as readonly string[]).includes(name));
  if (bad !== undefined || new Set(groups).size !== groups.length) {
    throw GatewayError.invalidRequest(
      `Invalid 'group_by': expected a comma list of ${USAGE_GROUPS.join(', ')}, each at most once${bad === undefined ? '' : ` (not '${bad}')`}.`,
      'group_by',
    );
  }
  return USAGE_GROUPS.filter((name) => groups.includes(name));
}

/**
 * Reads the per-key, per-model, per-day counters the workers record, and the per-team days beside them
 * (`team-usage.lua`): a key's row is split by the team its usage counted under, the rest of it under none.
 */
export class UsageReader {
  private readonly names: AccessNames;

  constructor(
    private readonly redis: Redis,
    namespace: string,
  ) {
    this.names = accessNames(namespace, keyLayoutOf(redis));
  }

  /** `from`/`to` are inclusive UTC days; both default to today, `from` to `to`. */
  async report(query: UsageQuery, currency: string | null = null, now = Date.now()): Promise<UsageReport> {
    const to = query.to ?? dayOf(now);
    const from = query.from ?? to;
    const toMs = parseDay(to);
    const fromMs = parseDay(from);
    if (fromMs === null)
      throw GatewayError.invalidRequest("Invalid 'from': expected a day as YYYY-MM-DD.", 'from');
    if (toMs === null) throw GatewayError.invalidRequest("Invalid 'to': expected a day as YYYY-MM-DD.", 'to');
    if (fromMs > toMs) throw GatewayError.invalidRequest("Invalid 'from': must not be after 'to'.", 'from');
    if ((toMs - fromMs) / DAY_MS >= MAX_DAYS) {
      throw GatewayError.invalidRequest(`The range may span at most ${MAX_DAYS} days.`, 'from');
    }
    if (query.key !== undefined && !KEY_ID_PATTERN.test(query.key)) {
      throw GatewayError.invalidRequest("Invalid 'key': expected a key id such as key_… .", 'key');
    }
    if (query.team !== undefined && !TEAM_ID_PATTERN.test(query.team)) {
      throw GatewayError.invalidRequest("Invalid 'team': expected a team id such as team_… .", 'team');
    }
    const groups = parseGroups(query.group_by);
    const days = daysBetween(fromMs, toMs);
    const cells = (await this.cells(query, days)).filter(
      (cell) => query.key === undefined || cell.key === query.key,
    );
    const rows = new Map<string, UsageRow & { micros: Counts; batchMicros: Counts }>();
    const totals = zero();
    const batchTotals = zero();
    for (const cell of cells) {
      add(totals, cell.counts);
      add(batchTotals, cell.batch);
      const byKey = groups.includes('key');
      const row = {
        key_id: byKey ? cell.key : null,
        team_id: byKey || groups.includes('team') ? cell.team : null,
        date: groups.includes('day') ? cell.day : null,
        model: groups.includes('model') ? cell.model : null,
      };
      const id = JSON.stringify(row);
      let entry = rows.get(id);
      if (!entry) {
        entry = { ...row, ...zero(), batch: zero(), micros: zero(), batchMicros: zero() };
        rows.set(id, entry);
      }
      add(entry.micros, cell.counts);
      add(entry.batchMicros, cell.batch);
    }
    const order = (row: UsageRow) => [row.key_id, row.date, row.team_id, row.model].map((v) => v ?? '');
    const data = [...rows.values()]
      .map(({ micros, batchMicros, ...row }) => ({ ...row, ...shown(micros), batch: shown(batchMicros) }))
      .sort((a, b) => {
        const [x, y] = [order(a), order(b)];
        const at = x.findIndex((v, i) => v !== y[i]);
        return at < 0 ? 0 : x[at]!.localeCompare(y[at]!);
      });
    return {
      object: 'usage',
      from,
      to,
      key: query.key ?? null,
      team: query.team ?? null,
      group_by: groups,
      currency,
      data,
      totals: { ...shown(totals), batch: shown(batchTotals) },
    };
  }

  /**
   * The cells of the days: the teams' days read as they are; with no team filter, the keys' days too, less
   * what their teams' days hold of them (the rest counted in no team).
   */
  private async cells(query: UsageQuery, days: string[]): Promise<Cell[]> {
    const teamIds =
      query.team !== undefined ? [query.team] : (await this.redis.smembers(this.names.usageTeamIds)).sort();
    const keyIds =
      query.team !== undefined
        ? []
        : query.key !== undefined
          ? [query.key]
          : (await this.redis.smembers(this.names.usageKeyIds)).sort();
    const reads = [
      ...teamIds.flatMap((team) => days.map((day) => ({ team, key: null, day }))),
      ...keyIds.flatMap((key) => days.map((day) => ({ team: null, key, day }))),
    ];
    // Sent together (the gateway's command connection pipelines them), each to its own slot on a Cluster.
    const hashes = await Promise.all(
      reads.map(({ team, key, day }) =>
        this.redis.hgetall(team !== null ? this.names.teamUsage(team, day) : this.names.usage(key, day)),
      ),
    );
    const teamCells: Cell[] = [];
    const teamless = new Map<string, Cell>();
    hashes.forEach((hash, index) => {
      const { team, key, day } = reads[index]!;
      const into = team !== null ? new Map<string, Cell>() : teamless;
      for (const [field, count] of Object.entries(hash ?? {})) {
        // A team's day: `<key id>|<model>|<counter>`; a key's: `<model>|<counter>`.
        const first = field.indexOf('|');
        const last = field.lastIndexOf('|');
        if (team !== null && first === last) continue;
        const keyId = team !== null ? field.slice(0, first) : key;
        const model = field.slice(team !== null ? first + 1 : 0, last);
        const counter = field.slice(last + 1);
        const batch = counter.startsWith(BATCH_PREFIX);
        const name = (batch ? counter.slice(BATCH_PREFIX.length) : counter) as Field;
        if (!FIELDS.includes(name)) continue;
        const id = `${keyId}|${day}|${model}`;
        let cell = into.get(id);
        if (!cell) {
          cell = { key: keyId, team, model, day, counts: zero(), batch: zero() };
          into.set(id, cell);
        }
        (batch ? cell.batch : cell.counts)[name] += Number(count);
      }
      if (team !== null) teamCells.push(...into.values());
    });
    if (query.team === undefined) {
      for (const cell of teamCells) {
        const rest = teamless.get(`${cell.key}|${cell.day}|${cell.model}`);
        if (rest) {
          add(rest.counts, cell.counts, -1);
          add(rest.batch, cell.batch, -1);
        }
      }
    }
    return [...teamCells, ...[...teamless.values()].filter((cell) => cell.counts.requests > 0)];
  }
}
