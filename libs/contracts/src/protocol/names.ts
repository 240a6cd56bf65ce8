import type { ModelKind } from '../model-types';

/**
 * Every Redis name both sides must agree on is built here. `namespace` is the deployment's key prefix
 * (KEY_PREFIX), so several stacks — or test runs — can share one Redis without seeing each other.
 */

/**
 * How names are laid out. On one node (or a Sentinel-managed one) every key is in one keyspace and names carry
 * no hash tag. On a Redis Cluster a script or MULTI may only touch keys of one slot, so the keys that
 * are used together carry the same hash tag (`{…}`, the only part Redis hashes): a model's queue with its
 * admission keys and upstream slots, an API key's limits with its usage, the key store's records — while
 * different models and different API keys hash apart and so spread over the masters.
 */
export type KeyLayout = 'node' | 'cluster';

/** The layout for a connection (ioredis marks its Cluster client with `isCluster`). */
export function keyLayoutOf(connection: { readonly isCluster?: boolean }): KeyLayout {
  return connection.isCluster === true ? 'cluster' : 'node';
}

/** `part` as a hash tag on a Cluster, as itself on one node. */
export function slotTagged(part: string, layout: KeyLayout): string {
  return layout === 'cluster' ? `{${part}}` : part;
}

/**
 * One BullMQ queue per model so each model's workers scale on their own backlog. On a Cluster the name is a
 * hash tag (BullMQ's scripts need all of a queue's keys in one slot), which every admission key of the model
 * shares.
 */
export function queueNameFor(kind: ModelKind, model: string, layout: KeyLayout = 'node'): string {
  // BullMQ reserves ':' in queue names; model ids such as `llama3:8b` are percent-encoded.
  return slotTagged(`${kind}.${encodeURIComponent(model)}`, layout);
}

/** Each gateway instance subscribes to exactly one reply channel, once, at start. */
export function replyChannelFor(namespace: string, gatewayId: string): string {
  return `${namespace}:reply:${gatewayId}`;
}

/** The client name of a gateway instance's reply subscriber, which the workers look up by it. */
export function replySubscriberNameFor(gatewayId: string): string {
  return `${gatewayId}:replies`;
}

/**
 * Present while the gateway of a reply channel lives (it renews the key; see `GatewayReplyRouter`): on a
 * Cluster, where a SPUBLISH count speaks for one node only, this is how a worker tells that a gateway is gone.
 */
export function replyLivenessKeyFor(channel: string): string {
  return `${channel}:alive`;
}

/**
 * Each worker process subscribes to its own control channel, once, at start: gateways publish control
 * messages there (cancel a job, reattach a resumed stream; control-message.ts). The Redis name keeps its
 * original `:cancel:` segment: during a rolling upgrade old gateways publish to it and old workers listen on
 * it, and a new name would cut every cancel between an old and a new process. Renaming it is a protocol
 * change (protocol-version.ts): new workers listening on both names for one release, then writers moving.
 */
export function controlChannelFor(namespace: string, workerId: string): string {
  return `${namespace}:cancel:${workerId}`;
}

/** Generated images travel by reference: a short-lived key, not a multi-megabyte pub/sub message. */
export function imageResultKeyFor(namespace: string, requestId: string, index: number): string {
  return `${namespace}:image:${requestId}:${index}`;
}

/** An embedding job's vectors travel by reference too: one short-lived key per request. */
export function embeddingResultKeyFor(namespace: string, requestId: string): string {
  return `${namespace}:embedding:${requestId}`;
}

/**
 * A resumable stream's replay log: a Redis Stream of the reply frames its worker published, in order, kept
 * for STREAM_RETENTION_MS (see README "Resumable streams").
 */
export function streamLogKeyFor(namespace: string, requestId: string): string {
  return `${namespace}:stream:${requestId}:log`;
}

/** Who may resume a stream, and what its chunks say (model, created): written by the gateway that opened it. */
export function streamMetaKeyFor(namespace: string, requestId: string): string {
  return `${namespace}:stream:${requestId}:meta`;
}

/**
 * The reply channel a resumed stream is to be sent to: read by a worker when it starts the job, so a stream
 * resumed while its job still waited in the queue reaches its new gateway.
 */
export function streamRouteKeyFor(namespace: string, requestId: string): string {
  return `${namespace}:stream:${requestId}:route`;
}

export const REQUEST_ID_PATTERN = /^[A-Za-z0-9_-]{8,64}$/;

/** API key ids: issued keys (`key_…`) and bootstrap keys from GATEWAY_API_KEYS (`bootstrap_…`). */
export const KEY_ID_PATTERN = /^(key_[0-9a-f]{24}|bootstrap_[0-9a-f]{16})$/;

/** Team ids (`team_…`): a team's keys share its limits and its place in a model's fair share. */
export const TEAM_ID_PATTERN = /^team_[0-9a-f]{24}$/;

/** A batch's line, `<batch id>:<digest of its custom_id>` (see `batchLineOf` in libs/batches). */
export const BATCH_LINE_PATTERN = /^batch_[0-9a-f]{24}:[0-9a-f]{32}$/;
/** A W3C `traceparent` of version 00 (version, trace id, parent span id, flags), as a job carries it. */
export const TRACEPARENT_PATTERN = /^00-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$/;

/** BullMQ's priority range: 1 runs first. */
export const JOB_PRIORITY_MAX = 2 ** 21;

/**
 * Stored completions (`store: true`) of one API key: a hash per completion, the list of its request's
 * messages, and indexes by creation time (all, and per model). Every name carries the key id, so a key can
 * only ever address its own; the `{…}` hash tag keeps one key's data in one cluster slot for its scripts.
 */
export function storedCompletionNamesFor(namespace: string, keyId: string) {
  const base = `${namespace}:stored:{${keyId}}`;
  return {
    record: (completionId: string) => `${base}:c:${completionId}`,
    messages: (completionId: string) => `${base}:c:${completionId}:messages`,
    index: `${base}:index`,
    modelIndex: (model: string) => `${base}:model:${model}`,
    /** What `record(id)` and `modelIndex(model)` put before the id / the model, for scripts. */
    recordPrefix: `${base}:c:`,
    modelIndexPrefix: `${base}:model:`,
  };
}

export type StoredCompletionNames = ReturnType<typeof storedCompletionNamesFor>;

/**
 * The Redis names of one API key's stored responses (the Responses API): per response a hash, and an index
 * by creation time that bounds how many a key keeps. Every name carries the key id, so a key can only ever
 * address its own; the `{…}` hash tag keeps one key's data in one cluster slot for its scripts.
 */
export function storedResponseNamesFor(namespace: string, keyId: string) {
  const base = `${namespace}:responses:{${keyId}}`;
  return {
    record: (responseId: string) => `${base}:r:${responseId}`,
    index: `${base}:index`,
    /** What `record(id)` puts before the id, for scripts. */
    recordPrefix: `${base}:r:`,
    /** A conversation's items as one string, begun by response `responseId` (see the stored scripts). */
    log: (responseId: string) => `${base}:log:${responseId}`,
  };
}

export type StoredResponseNames = ReturnType<typeof storedResponseNamesFor>;
