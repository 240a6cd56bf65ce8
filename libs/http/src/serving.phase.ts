/**
 * Whether the gateway still takes new requests: once it is shutting down, a request arriving on an open
 * connection is answered 503 before anything else runs. Provided by whoever runs the shutdown.
 */
export abstract class ServingPhase {
  /** True once the listener closed: new requests are refused. */
  abstract get refusing(): boolean;
}
