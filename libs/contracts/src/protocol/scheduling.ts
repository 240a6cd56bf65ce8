import type { ModelKind } from '../model-types';
import { queueNameFor, type KeyLayout } from './names';

/**
 * The scheduler's tiers, most urgent first. `batch` is the tier of offline batch work: it runs when nothing
 * else waits, and gets the same minimum share as `low` when something does.
 */
export const SCHEDULING_TIERS = ['high', 'normal', 'low', 'batch'] as const;
export type SchedulingTier = (typeof SCHEDULING_TIERS)[number];

/**
 * BullMQ priority bands (a worker takes the lowest number first). A job is queued in its tier's *direct*
 * band; it stays there while its model has room for it (see arrive.lua in libs/queue), else the scheduler
 * *parks* it, picks which parked job runs next and *releases* it to the band above the parked one, so a
 * worker's fetch takes it before every other parked job. Direct jobs go first: the scheduler counts them
 * as the fetches they will take, and releases only for the fetches beyond them. A tier's parked band still runs before
 * every lower tier's bands: `high` never waits behind `normal`. `promoted` is where a `low` or `batch` job
 * goes when its tier's minimum share is due: ahead of `normal`, behind `high`.
 *
 * The bands start at 10 so that no band is the number an older gateway gave a whole tier (1, 2, 3).
 */
export const SCHEDULING_BANDS = {
  high: { direct: 10, released: 11, parked: 12 },
  promoted: 13,
  normal: { direct: 20, released: 21, parked: 22 },
  low: { direct: 30, released: 31, parked: 32 },
  batch: { direct: 40, released: 41, parked: 42 },
} as const;

/** The BullMQ priority a job of `tier` is queued at. */
export function parkedPriorityOf(tier: SchedulingTier): number {
  return SCHEDULING_BANDS[tier].parked;
}

/** The tier of a queued job's priority: its band's, or undefined for a priority outside every band. */
export function tierOfPriority(priority: number | undefined): SchedulingTier | undefined {
  return SCHEDULING_TIERS.find((tier) => {
    const band = SCHEDULING_BANDS[tier];
    return band.parked === priority || band.released === priority || band.direct === priority;
  });
}

/** Whether a queued job's priority is a tier's direct band: a job the scheduler left unscheduled. */
export function isDirectPriority(priority: number | undefined): boolean {
  return SCHEDULING_TIERS.some((tier) => SCHEDULING_BANDS[tier].direct === priority);
}

/** A tenant's weight: its share of a saturated model relative to the other waiting tenants'. */
export const TENANT_WEIGHT_MIN = 1;
export const TENANT_WEIGHT_MAX = 100;
export const DEFAULT_TENANT_WEIGHT = 1;

/** The share of a saturated model that `low` and `batch` jobs get while `normal` work waits. */
export const DEFAULT_MIN_SHARE = 0.05;
export const MIN_SHARE_MAX = 0.5;

/**
 * The scheduler's Redis names for one model: next to its BullMQ queue and in its hash slot on a Cluster
 * (the queue name is the hash tag there), so every scheduling step is one atomic script.
 *
 * - `base:q:<tier>:<tenant>` — a list, the tenant's parked job ids of that tier, oldest first;
 * - `base:ring:<tier>` — a sorted set, the tenants with parked jobs of that tier by virtual start time;
 * - `base:waiting` — a sorted set, the tenants with parked jobs by how many they have (the waiting room's
 *   shares, and the top waiting keys the console shows);
 * - `base:tenants` — a hash, per waiting tenant its weight (`w:<tenant>`), per tenant the virtual time it
 *   left a tier's ring at (`f:<tier>:<tenant>`), and the model's totals: the waiting tenants' weights' sum
 *   (`wsum`), each tier's virtual clock (`v:<tier>`), the minimum share's credit (`credit`), and the solo
 *   tenant (`solo`: `<tier>|<tenant>|<weight>|<direct band>|<parked band>`), the one tenant whose unparked
 *   jobs passed the backlog while nobody else waited (arrive.lua);
 * - `base:owners` — a hash, per parked job id its `<tenant>|<tier>`, so a job taken back by id leaves its
 *   tenant's line.
 */
export function schedulerNamesFor(namespace: string, kind: ModelKind, model: string, layout: KeyLayout) {
  const queue = queueNameFor(kind, model, layout);
  const base = `${namespace}:sched:${queue}`;
  return {
    base,
    tenants: `${base}:tenants`,
    waiting: `${base}:waiting`,
    owners: `${base}:owners`,
    /** BullMQ's key prefix of this queue's jobs (`<prefix>:<queue>:<job id>`). */
    jobPrefix: `${namespace}:${queue}:`,
    prioritized: `${namespace}:${queue}:prioritized`,
    /** BullMQ's counter that orders jobs of one priority (`pc`): a released job takes the next number. */
    priorityCounter: `${namespace}:${queue}:pc`,
  };
}

export type SchedulerNames = ReturnType<typeof schedulerNamesFor>;

/** Tenant ids are API key ids (a later team level passes its team's id): the characters of a key id. */
export const TENANT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
