import type { Redis } from 'ioredis';
import { GatewayError, KEY_ID_PATTERN, keyLayoutOf } from '@mgw/contracts';
import { accessNames, type AccessNames } from '../access.names';
import type { UsageCounts, UsageReport, UsageRow, UsageTotals } from '../admin-api.types';
import { DAY_MS, dayOf, daysBetween, parseDay } from './usage.days';

export interface UsageQuery {
  key?: string;
  from?: string;
  to?: string;
}

const MAX_DAYS = 366;
const FIELDS = ['requests', 'prompt_tokens', 'completion_tokens', 'images'] as const;
/** A batch line's counts are also kept under these (`usage.lua`). */
const BATCH_PREFIX = 'batch_';

const zero = (): UsageCounts => ({ requests: 0, prompt_tokens: 0, completion_tokens: 0, images: 0 });

/** Reads the per-key, per-model, per-day counters the workers record. */
export class UsageReader {
  private readonly names: AccessNames;

  constructor(
    private readonly redis: Redis,
    namespace: string,
  ) {
    this.names = accessNames(namespace, keyLayoutOf(redis));
  }

  /** `from`/`to` are inclusive UTC days; both default to today, `from` to `to`. */
  async report(query: UsageQuery, now = Date.now()): Promise<UsageReport> {
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
    const keyIds =
      query.key !== undefined ? [query.key] : (await this.redis.smembers(this.names.usageKeyIds)).sort();
    const days = daysBetween(fromMs, toMs);
    const cells = keyIds.flatMap((keyId) => days.map((date) => ({ keyId, date })));
    // Sent together (the gateway's command connection pipelines them), each to its key's slot on a Cluster.
    const results = await Promise.all(
      cells.map(({ keyId, date }) => this.redis.hgetall(this.names.usage(keyId, date))),
    );
    const data: UsageRow[] = [];
    const totals: UsageTotals = { ...zero(), batch: zero() };
    results.forEach((value, index) => {
      const { keyId, date } = cells[index]!;
      const byModel = new Map<string, UsageRow>();
      for (const [field, count] of Object.entries(value ?? {})) {
        const sep = field.lastIndexOf('|');
        const model = field.slice(0, sep);
        const counter = field.slice(sep + 1);
        const batch = counter.startsWith(BATCH_PREFIX);
        const name = (batch ? counter.slice(BATCH_PREFIX.length) : counter) as (typeof FIELDS)[number];
        if (!FIELDS.includes(name)) continue;
        let row = byModel.get(model);
        if (!row) {
          row = { key_id: keyId, date, model, ...zero(), batch: zero() };
          byModel.set(model, row);
        }
        (batch ? row.batch : row)[name] = Number(count);
        (batch ? totals.batch : totals)[name] += Number(count);
      }
      data.push(...[...byModel.values()].sort((a, b) => a.model.localeCompare(b.model)));
    });
    return { object: 'usage', from, to, key: query.key ?? null, data, totals };
  }
}
