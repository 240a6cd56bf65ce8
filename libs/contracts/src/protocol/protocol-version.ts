import { ProtocolError } from './protocol.error';

/**
 * The protocol version of every message family between processes. A rolling deploy runs old and new
 * gateways, registries and workers together, so each message says which version of its family it is (its
 * `v` field; see README "Architecture"), and the rule is:
 *
 * - One integer per family. A reader knows its family's version and reads every version up to it.
 * - Adding an optional field keeps the version: readers ignore fields they do not know (class-validator
 *   readers drop them, see `UnknownFields`), so a newer writer's extra field is never a refusal.
 * - Anything an older reader would misread is a new version: a field removed, renamed, made required or
 *   given another meaning, a new value in an enumeration a reader checks (a cancel reason, a model type), a
 *   new reply kind. A reader refuses a version above its own, and a message missing a field it needs,
 *   with a log line naming what it refused (`ProtocolVersionError`); nothing else.
 * - A message without `v` is version 1: the messages of releases before versions carried none (jobs
 *   aside), so a new reader serves an old writer.
 * - Writers put `v` on messages whose readers of the release before versions already ignored unknown
 *   fields: jobs, replies (and so their frames and replay-log entries), control messages, the registry's
 *   answers, upstream events. Heartbeats, deregistrations and lookups sent to the registry, stream meta
 *   records and key invalidations are still written as version 1 without a `v`: the readers before this one
 *   refused any field they did not know, `v` included, and stamping it would fail them during the very
 *   upgrade that brings versions. Their first version 2 writes `v`, and every reader since reads it.
 * - A new version of a family is rolled out in two releases: first readers that understand it, then
 *   writers that write it.
 *
 * Not messages, so not versioned: values that are one string (a stream's route key, an image's payload).
 * Changing one of those means a new key name.
 */
export const PROTOCOL_VERSIONS = {
  /**
   * BullMQ job data, gateway → worker (`ChatJobData`, `ImageJobData`, `EmbeddingJobData`). Version 2: the
   * embedding job. Its queues are new, so only embedding workers, which read version 2, ever see one.
   * Version 3: a count-only chat job (`countOnly`), which a worker of version 2 would misread as a request
   * to generate, so it refuses it by its version instead. Version 4: a chat job whose request is the
   * neutral `ChatRequest` instead of a Chat Completions body, written only for a request no such body
   * carries (`chatJobFields`); every other chat job is still written as a body, as version 1 or 3, and image
   * jobs as version 1 (`jobProtocolVersionOf`).
   */
  job: 4,
  /**
   * Reply messages, worker → gateway, one by one in a frame and in a stream's replay log. Version 2: the
   * `embedding-done` kind, written as version 2 and sent only to gateways that queued an embedding job;
   * every other kind is still written as version 1 (`replyProtocolVersionOf`).
   */
  reply: 2,
  /**
   * Cancel and reattach, gateway → the worker running a job (`control-message.ts`), on the worker's control
   * channel. Naming it "control" in code changed nothing on the wire: same messages, same Redis channel name
   * (`controlChannelFor` keeps `:cancel:`), so this stays version 1.
   */
  control: 1,
  /**
   * Heartbeats, deregistrations and lookups to the registry, and its answers. Version 2: the model type
   * `embeddings`. A heartbeat serving an embedding model and a model entry of that type are written as
   * version 2 (an older reader refuses them by their version, naming it, instead of by an unknown type);
   * everything else is still written as version 1 (`registryProtocolVersionOf`).
   */
  registry: 2,
  /** A resumable stream's meta record, gateway → the gateway that resumes it. */
  streamMeta: 1,
  /** A changed API key, admin API or CLI → every gateway (`key-invalidation.ts`). */
  keyInvalidation: 1,
  /** An upstream's circuit opened or closed, or one of its slots freed, worker → workers (`upstream-event.ts`). */
  upstreamEvent: 1,
} as const;

export type ProtocolFamily = keyof typeof PROTOCOL_VERSIONS;

export const JOB_PROTOCOL_VERSION = PROTOCOL_VERSIONS.job;
export const REPLY_PROTOCOL_VERSION = PROTOCOL_VERSIONS.reply;
export const CONTROL_PROTOCOL_VERSION = PROTOCOL_VERSIONS.control;
export const REGISTRY_PROTOCOL_VERSION = PROTOCOL_VERSIONS.registry;

/**
 * The version a writer stamps: the lowest that describes the message, so readers of an older release keep
 * reading every message they can serve while a family grows (version 2 of jobs, replies and registry
 * messages only adds the embedding model type).
 */
export function jobProtocolVersionOf(kind: string, job?: { countOnly?: boolean }): number {
  if (job?.countOnly === true) return 3;
  return kind === 'embedding' ? 2 : 1;
}

export function replyProtocolVersionOf(kind: string): number {
  return kind === 'embedding-done' ? 2 : 1;
}

/** `types`: the model types the message names (a heartbeat's served models, an entry's type). */
export function registryProtocolVersionOf(types: readonly string[]): number {
  return types.includes('embeddings') ? 2 : 1;
}

const FAMILY_NAMES: { readonly [F in ProtocolFamily]: string } = {
  job: 'job',
  reply: 'reply message',
  control: 'control message',
  registry: 'registry message',
  streamMeta: 'stream meta record',
  keyInvalidation: 'key invalidation',
  upstreamEvent: 'upstream event',
};

function describeVersion(version: unknown): string {
  return typeof version === 'number' ? String(version) : (JSON.stringify(version) ?? typeof version);
}

/** A message of a version this process does not read: newer than its own, or not a version at all. */
export class ProtocolVersionError extends ProtocolError {
  constructor(
    readonly family: ProtocolFamily,
    readonly version: unknown,
  ) {
    super('');
    const newest = PROTOCOL_VERSIONS[family];
    this.message =
      typeof version === 'number' && Number.isSafeInteger(version) && version > newest
        ? `${FAMILY_NAMES[family]} of protocol version ${version} refused: this process reads versions 1 to ${newest}`
        : `${FAMILY_NAMES[family]} refused: 'v' must be a protocol version from 1 to ${newest}, got ${describeVersion(version)}`;
    this.name = 'ProtocolVersionError';
  }
}

/**
 * The version of a message of `family` from its `v` field: 1 when absent, else an integer from 1 to this
 * process's version; anything else throws a `ProtocolVersionError`. Allocates nothing unless it throws.
 */
export function protocolVersionOf(family: ProtocolFamily, v: unknown): number {
  if (v === undefined) return 1;
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 && v <= PROTOCOL_VERSIONS[family]) return v;
  throw new ProtocolVersionError(family, v);
}
