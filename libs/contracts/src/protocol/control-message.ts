import { CONTROL_PROTOCOL_VERSION, protocolVersionOf } from './protocol-version';
import { ProtocolError } from './protocol.error';
import { protocolReader as read } from './protocol.reader';

/** What a gateway publishes on a worker's control channel to stop one running job. */
export interface CancelMessage {
  requestId: string;
  reason:
    | 'client_disconnected'
    | 'deadline_exceeded'
    | 'gateway_shutdown'
    | 'protocol_error'
    | 'worker_unresponsive'
    | 'connection_lost';
}

/**
 * What a gateway publishes on a worker's control channel when a client resumed a stream there: the job's
 * replies go to `channel` from now on (the worker then announces itself there with an `alive`).
 */
export interface ReattachMessage {
  requestId: string;
  reattach: string;
}

export type ControlMessage = CancelMessage | ReattachMessage;

export function isReattach(message: ControlMessage): message is ReattachMessage {
  return 'reattach' in message;
}

const CANCEL_REASONS: readonly CancelMessage['reason'][] = [
  'client_disconnected',
  'deadline_exceeded',
  'gateway_shutdown',
  'protocol_error',
  'worker_unresponsive',
  'connection_lost',
];

/** What a gateway publishes on a worker's control channel, with the control protocol's version. */
export function encodeControlMessage(message: ControlMessage): string {
  return JSON.stringify({ v: CONTROL_PROTOCOL_VERSION, ...message });
}

/**
 * Control channels carry data from other processes: checked like a reply message, first problem throws.
 * Fields the worker does not know are ignored; a newer protocol version is refused (protocol-version.ts).
 */
export function parseControlMessage(raw: string): ControlMessage {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ProtocolError('control message is not JSON');
  }
  const record = read.record(parsed, 'control message');
  protocolVersionOf('control', record.v);
  const requestId = read.string(record, 'requestId');
  if (record.reattach !== undefined) {
    const channel = read.string(record, 'reattach');
    if (channel.length === 0) read.report("'reattach' is empty");
    return { requestId, reattach: channel };
  }
  const reason = record.reason as CancelMessage['reason'];
  if (!CANCEL_REASONS.includes(reason)) read.report("'reason' is not a known cancel reason");
  return { requestId, reason };
}

/** A cancel message alone (what the cancel tests and tools expect); a reattach is refused. */
export function parseCancelMessage(raw: string): CancelMessage {
  const message = parseControlMessage(raw);
  if (isReattach(message)) throw new ProtocolError("'reason' is not a known cancel reason");
  return message;
}
