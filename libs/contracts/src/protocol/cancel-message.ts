import { ProtocolError } from './protocol.error';
import { protocolReader as read } from './protocol.reader';

/** What a gateway publishes on a worker's cancel channel to stop one running job. */
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

const CANCEL_REASONS: readonly CancelMessage['reason'][] = [
  'client_disconnected',
  'deadline_exceeded',
  'gateway_shutdown',
  'protocol_error',
  'worker_unresponsive',
  'connection_lost',
];

/** Cancel channels carry data from other processes: checked like a reply message, first problem throws. */
export function parseCancelMessage(raw: string): CancelMessage {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ProtocolError('cancel message is not JSON');
  }
  const record = read.record(parsed, 'cancel message');
  const reason = record.reason as CancelMessage['reason'];
  if (!CANCEL_REASONS.includes(reason)) read.report("'reason' is not a known cancel reason");
  return { requestId: read.string(record, 'requestId'), reason };
}
