import type { Redis } from 'ioredis';
import { RedisScript } from '@mgw/redis';
import {
  DEFAULT_TENANT_WEIGHT,
  keyLayoutOf,
  SCHEDULING_BANDS,
  SCHEDULING_TIERS,
  schedulerNamesFor,
  tierOfPriority,
  type ModelKind,
  type SchedulerNames,
  type SchedulingTier,
} from '@mgw/contracts';

const ARRIVE = RedisScript.fromFile(__dirname, 'arrive.lua');
const FORGET = RedisScript.fromFile(__dirname, 'forget.lua');
const RELEASE = RedisScript.fromFile(__dirname, 'release.lua');

/**
 * A job queued direct stays so while at most this many jobs (itself counted) would be taken before it and
 * nobody's work is parked: the model is not saturated, so it needs no turn, and skipping the scheduler spares
 * its two scripts. A tenant that arrives as the model saturates waits behind at most this many unscheduled jobs.
 */
export const UNSATURATED_BACKLOG = 8;

const SHIFT = 2 ** 32;

/** The solo tenant as arrive.lua writes it: `<tier>|<tenant>|<weight>|<direct band>|<parked band>`. */
function soloRunOf(solo: string): { tenant: string; direct: number } | null {
  const [, tenant, , direct] = solo.split('|');
  const band = Number(direct);
  return tenant === undefined || !Number.isSafeInteger(band) ? null : { tenant, direct: band };
}

/** The bands as release.lua reads them (ARGV 5-17). */
const BAND_ARGS: number[] = [
  ...SCHEDULING_TIERS.flatMap((tier) => [
    SCHEDULING_BANDS[tier].direct,
    SCHEDULING_BANDS[tier].released,
    SCHEDULING_BANDS[tier].parked,
  ]),
  SCHEDULING_BANDS.promoted,
];

/** What became of a queued job that the scheduler was given (see `FairScheduler.arrive`). */
export type ArrivalOutcome = 'parked' | 'parked-with-room' | 'direct' | 'gone';

/** arrive.lua's answers. */
const ARRIVAL_OUTCOMES: readonly ArrivalOutcome[] = ['gone', 'parked', 'direct', 'parked-with-room'];

/** A queued job as the scheduler sees it: whose it is, and in which tier. */
export interface ScheduledJob {
  id: string;
  tenant: string;
  tier: SchedulingTier;
  weight: number;
}

/** A model's waiting tenants, for the admin API and the console. */
export interface WaitingTenants {
  /** Tenants with parked jobs. */
  tenants: number;
  /** The tenants with the most parked jobs, most first. */
  top: { tenant: string; waiting: number }[];
}

/**
 * Fair share per tenant over one model's BullMQ queue (the algorithm is in release.lua; the state's layout in
 * contracts' scheduling.ts). Gateways call `arrive` after queueing a job parked and `forget` after taking a
 * waiting job back; workers call `release` for the jobs they are about to fetch. Every step is one script
 * in the model's slot, so any number of gateways and workers share one exact schedule.
 */
export class FairScheduler {
  private readonly names = new Map<string, SchedulerNames>();

  constructor(
    private readonly redis: Redis,
    private readonly namespace: string,
  ) {}

  /**
   * Schedules a queued job. One queued in its tier's direct band stays there while the model is not
   * saturated (see arrive.lua); otherwise it is parked and waits for its turn. One queued in its parked band
   * is parked: `parked-with-room` when the model had room for it. `gone` when it no longer waits (a worker
   * took it already).
   */
  async arrive(kind: ModelKind, model: string, job: ScheduledJob): Promise<ArrivalOutcome> {
    const names = this.namesOf(kind, model);
    const band = SCHEDULING_BANDS[job.tier];
    const outcome = await ARRIVE.run(
      this.redis,
      [names.prioritized, names.tenants, names.waiting, names.owners],
      [
        names.base,
        job.id,
        job.tenant,
        job.tier,
        job.weight,
        names.jobPrefix,
        band.direct,
        band.parked,
        UNSATURATED_BACKLOG,
      ],
    );
    return ARRIVAL_OUTCOMES[Number(outcome)] ?? 'gone';
  }

  /** Drops a parked job that left its queue without running (a no-op for a job it does not know). */
  async forget(kind: ModelKind, model: string, id: string): Promise<void> {
    const names = this.namesOf(kind, model);
    await FORGET.run(this.redis, [names.tenants, names.waiting, names.owners], [names.base, id]);
  }

  /**
   * Releases up to `count` parked jobs, fairly, for a fetch about to be sent; how many it released, or null
   * when nothing is parked (no tenant waits).
   */
  async release(kind: ModelKind, model: string, count: number, minShare: number): Promise<number | null> {
    const names = this.namesOf(kind, model);
    const released = await RELEASE.run(
      this.redis,
      [names.prioritized, names.tenants, names.waiting, names.owners, names.priorityCounter],
      [names.base, names.jobPrefix, minShare, count, ...BAND_ARGS],
    );
    return released === -1 ? null : Number(released);
  }

  /**
   * How many tenants wait, and the `top` with most waiting jobs: their parked jobs, or for a solo tenant (the
   * one tenant past the backlog, left unparked; see arrive.lua) its jobs queued unscheduled.
   */
  async waiting(kind: ModelKind, model: string, top: number): Promise<WaitingTenants> {
    const names = this.namesOf(kind, model);
    const [tenants, flat, solo] = await Promise.all([
      this.redis.zcard(names.waiting),
      this.redis.zrevrange(names.waiting, 0, top - 1, 'WITHSCORES'),
      this.redis.hget(names.tenants, 'solo'),
    ]);
    const list: WaitingTenants['top'] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      list.push({ tenant: flat[i]!, waiting: Number(flat[i + 1]) });
    }
    const run = solo === null ? null : soloRunOf(solo);
    if (run === null || tenants > 0 || top < 1) return { tenants, top: list };
    const unscheduled = await this.redis.zcount(
      names.prioritized,
      run.direct * SHIFT,
      (run.direct + 1) * SHIFT - 1,
    );
    return unscheduled > 0
      ? { tenants: 1, top: [{ tenant: run.tenant, waiting: unscheduled }] }
      : { tenants, top: list };
  }

  private namesOf(kind: ModelKind, model: string): SchedulerNames {
    const id = `${kind}\n${model}`;
    let names = this.names.get(id);
    if (!names) {
      names = schedulerNamesFor(this.namespace, kind, model, keyLayoutOf(this.redis));
      this.names.set(id, names);
    }
    return names;
  }
}

/** The scheduling of a job with this priority and key, or undefined for a job outside the bands. */
export function scheduledJobOf(
  id: string,
  priority: number | undefined,
  tenant: string | undefined,
  weight = DEFAULT_TENANT_WEIGHT,
): ScheduledJob | undefined {
  const tier = tierOfPriority(priority);
  if (tier === undefined || tenant === undefined || tenant === '') return undefined;
  return { id, tenant, tier, weight };
}
