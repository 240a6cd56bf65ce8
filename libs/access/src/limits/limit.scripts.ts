import { RedisScript } from '@mgw/redis';

/*
 * The limiter's scripts, one `.lua` file each beside this one (their KEYS, ARGV and replies are written at
 * the top of each). The admission's parts are Lua functions over the keys they touch (key-limits.lua,
 * model-depth.lua), so that one node runs them as one script and a Cluster as two or three: an API key's
 * limits, its team's and a model's queue live in different slots.
 */

/** Every limit checked, and recorded only if all pass (one node). */
export const ADMIT_SCRIPT = RedisScript.fromFile(__dirname, 'admit.lua');
/** The key's (and on one node its team's) admission step; on a Cluster, one holder's, in its slot. */
export const ADMIT_KEY_SCRIPT = RedisScript.fromFile(__dirname, 'admit-key.lua');
/** The key's limits checked without counting anything. */
export const CHECK_KEY_SCRIPT = RedisScript.fromFile(__dirname, 'check-key.lua');
/** A Cluster's second admission step, in the model's slot. */
export const ADMIT_MODEL_SCRIPT = RedisScript.fromFile(__dirname, 'admit-model.lua');
/** Takes back an admission whose job never reached the queue. */
export const ROLLBACK_SCRIPT = RedisScript.fromFile(__dirname, 'rollback.lua');
/** A finished job's usage, once per request, with the model's served count (one node). */
export const RECORD_USAGE_SCRIPT = RedisScript.fromFile(__dirname, 'record-usage.lua');
/** A Cluster's usage step in the API key's slot. */
export const RECORD_KEY_USAGE_SCRIPT = RedisScript.fromFile(__dirname, 'record-key-usage.lua');
/** A Cluster's served count, in the model's slot. */
export const COUNT_SERVED_SCRIPT = RedisScript.fromFile(__dirname, 'count-served.lua');
/** A Cluster's team TPM reconciliation, in the team's slot, after the key's usage counted. */
export const RECONCILE_TEAM_SCRIPT = RedisScript.fromFile(__dirname, 'reconcile-team.lua');
/** Takes back the budget reservations of an admission whose job never reached the queue. */
export const ROLLBACK_BUDGET_SCRIPT = RedisScript.fromFile(__dirname, 'rollback-budget.lua');
