/**
 * A message of another process that does not follow the protocol (a reply, a control message, …); it fails
 * only what it belongs to (a reply: its request). `what` names the message in the error.
 */
export class ProtocolError extends Error {
  constructor(reason: string, what = 'reply message') {
    super(`Malformed ${what}: ${reason}`);
    this.name = 'ProtocolError';
  }
}
