/**
 * Whether the gateway still takes new requests: once it is shutting down, a request arriving on an open
 * connection is answered 503 before anything else runs. Provided by whoever runs the shutdown.
 */
export abstract class ServingPhase {
  /** True from the first step of a shutdown: `/readyz` answers 503 so load balancers stop routing here. */
  abstract get stopping(): boolean;
  /** True once the listener closed: new requests are refused. */
  abstract get refusing(): boolean;
}
