/** A reply or cancel message that does not follow the protocol; it fails only the request it belongs to. */
export class ProtocolError extends Error {
  constructor(reason: string) {
    super(`Malformed reply message: ${reason}`);
    this.name = 'ProtocolError';
  }
}
