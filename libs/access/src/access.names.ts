import { queueNameFor, slotTagged, type KeyLayout, type ModelKind } from '@mgw/contracts';

/**
 * Every Redis name of keys, limits and usage, in the deployment's namespace. Key ids and request ids are
 * restricted to [A-Za-z0-9_-], and model ids go through the queue-name encoding, so no name can collide.
 *
 * On a Cluster (`layout`): the key store's names share one slot (`{keys}`: a key is created, changed and
 * revoked in one MULTI, and found by its hash); an API key's limits, reservations and usage share its id's
 * slot (its admission step and its usage are one script each); a model's admission keys share its queue's.
 * A reservation and a usage marker then need the key id besides the request id (`keyId` below). Teams are
 * kept with the keys (`{keys}`); a team's limits and reservations share its id's slot, so on a Cluster a key's
 * admission step and its team's are two, each atomic in its slot (limiter.ts).
 */
export function accessNames(namespace: string, layout: KeyLayout = 'node') {
  const cluster = layout === 'cluster';
  const keys = `${namespace}:${slotTagged('keys', layout)}`;
  // Unattributed usage (no key id) still needs a tag: an empty `{}` would hash the whole name.
  const keyTag = (keyId: string) => (cluster ? slotTagged(keyId || 'unattributed', layout) : keyId);
  const limits = (keyId: string) => `${namespace}:limits:${keyTag(keyId)}`;
  const teamLimits = (teamId: string) =>
    `${namespace}:limits:team:${cluster ? slotTagged(teamId, layout) : teamId}`;
  return {
    keyRecord: (id: string) => `${keys}:record:${id}`,
    keyByHash: (hash: string) => `${keys}:hash:${hash}`,
    keyIds: `${keys}:ids`,
    /** pub/sub: the hash of a key whose record changed; every gateway drops it from its cache. */
    keysChanged: `${namespace}:keys:changed`,
    teamRecord: (id: string) => `${keys}:team:${id}`,
    teamIds: `${keys}:teams`,
    /** The live (unrevoked) keys of a team: a team with any cannot be deleted. */
    teamKeys: (id: string) => `${keys}:team-keys:${id}`,
    teamTokenRecord: (id: string) => `${keys}:team-token:${id}`,
    teamTokenByHash: (hash: string) => `${keys}:team-token-hash:${hash}`,
    teamTokens: (teamId: string) => `${keys}:team-tokens:${teamId}`,
    teamRpm: (teamId: string) => `${teamLimits(teamId)}:rpm`,
    teamTpm: (teamId: string) => `${teamLimits(teamId)}:tpm`,
    teamConcurrency: (teamId: string) => `${teamLimits(teamId)}:concurrency`,
    /** What a request reserved against its team's TPM window, until the worker reconciles it. */
    teamReservation: (requestId: string, teamId: string) => `${teamLimits(teamId)}:reservation:${requestId}`,
    /** A team's budget: its period, spend and tokens, and its requests' reservations (budget.lua). */
    teamBudget: (teamId: string) => `${teamLimits(teamId)}:budget`,
    /** A key's budget, as a team's. */
    budget: (keyId: string) => `${limits(keyId)}:budget`,
    rpm: (keyId: string) => `${limits(keyId)}:rpm`,
    tpm: (keyId: string) => `${limits(keyId)}:tpm`,
    concurrency: (keyId: string) => `${limits(keyId)}:concurrency`,
    /** What a request reserved against its key's TPM window, until the worker reconciles it. */
    reservation: (requestId: string, keyId: string) =>
      cluster ? `${limits(keyId)}:reservation:${requestId}` : `${namespace}:limits:reservation:${requestId}`,
    /** Admissions between the depth check and the job landing in the queue. */
    admitting: (kind: ModelKind, model: string) =>
      `${namespace}:admission:${queueNameFor(kind, model, layout)}:pending`,
    /** Jobs finished per second, for the model's measured service rate. */
    served: (kind: ModelKind, model: string) =>
      `${namespace}:admission:${queueNameFor(kind, model, layout)}:served`,
    usage: (keyId: string, day: string) => `${namespace}:usage:${keyTag(keyId)}:${day}`,
    usageKeyIds: `${namespace}:usage:keys`,
    /** A team's day of usage per key and model (team-usage.lua), in its team's slot. */
    teamUsage: (teamId: string, day: string) =>
      `${namespace}:usage:team:${cluster ? slotTagged(teamId, layout) : teamId}:${day}`,
    /** The teams that have any usage recorded. */
    usageTeamIds: `${namespace}:usage:teams`,
    /** Marks a request whose usage was recorded, so a re-run job cannot count twice. */
    usageRecorded: (requestId: string, keyId: string) =>
      cluster
        ? `${namespace}:usage:${keyTag(keyId)}:recorded:${requestId}`
        : `${namespace}:usage:recorded:${requestId}`,
  };
}

export type AccessNames = ReturnType<typeof accessNames>;
