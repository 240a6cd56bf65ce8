import { PROTOCOL_VERSIONS, protocolVersionOf } from './protocol-version';
import { ProtocolError } from './protocol.error';

/**
 * What the workers of one model tell each other on its upstream-events channel: a slot of `upstream` was
 * released by `sender` (wake one waiter; the sender has woken its own already), or its circuit opened or
 * closed in `sender`'s view.
 */
export type UpstreamEvent =
  | { kind: 'free'; upstream: string; sender?: string }
  | { kind: 'up' | 'out'; upstream: string; sender: string };

const MAX_FIELD_CHARS = 128;
const VERSION = /^[0-9]{1,9}$/;

/**
 * Fields separated by `|`: kind, upstream, sender (may be empty for `free`), protocol version, then any fields a
 * later version adds. Releases before versions wrote `free|<upstream>` and `<up|out>|<upstream>|<sender>`
 * and take all that follows the upstream for the sender, which they only compare with their own id: the
 * fields after it do not disturb them.
 */
export function encodeUpstreamEvent(event: UpstreamEvent): string {
  const sender = event.sender ?? '';
  return `${event.kind}|${event.upstream}|${sender}|${PROTOCOL_VERSIONS.upstreamEvent}`;
}

/** An upstream event; a newer version or a malformed one throws (`ProtocolError`). */
export function readUpstreamEvent(raw: string): UpstreamEvent {
  const [kind, upstream, sender, v] = raw.split('|', 4);
  if (v !== undefined) protocolVersionOf('upstreamEvent', VERSION.test(v) ? Number(v) : v);
  const malformed = (reason: string) => new ProtocolError(reason, 'upstream event');
  if (upstream === undefined || upstream.length === 0 || upstream.length > MAX_FIELD_CHARS) {
    throw malformed(`the upstream must be 1 to ${MAX_FIELD_CHARS} characters`);
  }
  if (kind === 'free') {
    if (sender === undefined || sender.length === 0) return { kind, upstream };
    if (sender.length > MAX_FIELD_CHARS)
      throw malformed(`the sender must be at most ${MAX_FIELD_CHARS} characters`);
    return { kind, upstream, sender };
  }
  if (kind !== 'up' && kind !== 'out') throw malformed(`unknown kind ${JSON.stringify(kind)}`);
  if (sender === undefined || sender.length === 0 || sender.length > MAX_FIELD_CHARS) {
    throw malformed(`the sender must be 1 to ${MAX_FIELD_CHARS} characters`);
  }
  return { kind, upstream, sender };
}
