import {
  FailFast,
  KEY_ID_PATTERN,
  protocolVersionOf,
  RecordReader,
  TEAM_ID_PATTERN,
  TRACEPARENT_PATTERN,
  type FieldRecord,
} from '@mgw/contracts';

/** What the gateway that opened a resumable stream keeps about it, next to its replay log. */
export interface StreamMeta {
  /** The key that created the stream: the only one that may resume it. */
  keyId: string;
  /**
   * The wire protocol that started the stream (`chat.completions`): it is resumed only through that
   * protocol's route, whose renderer its events are. Its render context follows: `model` and `created` for
   * chat; a protocol that needs more adds its fields here.
   */
  protocol: string;
  model: string;
  /** The chunks' `created` (seconds). */
  created: number;
  /** Epoch ms after which nobody waits for the job any more. */
  deadline: number;
  /** The concurrency lease the stream holds (a resume elsewhere keeps it alive); null when the key has none. */
  ticketId: string | null;
  /** The key's team, when the lease is held in its team's concurrency too. */
  teamId?: string;
  /** The `traceparent` of the request that started the stream (when traced), which a resume links to. */
  traceparent?: string;
}

export class InvalidStreamMetaError extends Error {
  override readonly name = 'InvalidStreamMetaError';
}

const read = new RecordReader(
  new FailFast((message) => new InvalidStreamMetaError(`stream meta: ${message}`)),
);
/** What a meta without `protocol` was written by: a gateway from before protocols were named. */
const CHAT_PROTOCOL = 'chat.completions';
const TICKET_ID = /^[0-9a-z]{1,64}$/;

/**
 * A stream's meta as read back from Redis, maybe written by another gateway of another release: every field
 * this gateway reads checked, others ignored, a newer protocol version refused (see protocol-version.ts).
 * Written without `v` while the stream meta protocol is at version 1.
 */
export function readStreamMeta(raw: string): StreamMeta {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new InvalidStreamMetaError('stream meta: not JSON');
  }
  const record: FieldRecord = read.record(parsed, 'stream meta');
  protocolVersionOf('streamMeta', record.v);
  const keyId = read.string(record, 'keyId');
  if (!KEY_ID_PATTERN.test(keyId)) read.report('keyId is not a key id');
  const protocol = record.protocol === undefined ? CHAT_PROTOCOL : read.string(record, 'protocol');
  const model = read.string(record, 'model');
  if (model.length === 0) read.report('model is empty');
  const ticketId = read.nullableString(record, 'ticketId');
  if (ticketId !== null && !TICKET_ID.test(ticketId)) read.report('ticketId is not a ticket id');
  const meta: StreamMeta = {
    keyId,
    protocol,
    model,
    created: read.natural(record, 'created'),
    deadline: read.natural(record, 'deadline'),
    ticketId,
  };
  if (record.teamId !== undefined) {
    const teamId = read.string(record, 'teamId');
    if (!TEAM_ID_PATTERN.test(teamId)) read.report('teamId is not a team id');
    meta.teamId = teamId;
  }
  // Only a trace to link to: one that is not a traceparent is dropped, it never stops a resume.
  if (typeof record.traceparent === 'string' && TRACEPARENT_PATTERN.test(record.traceparent))
    meta.traceparent = record.traceparent;
  return meta;
}
