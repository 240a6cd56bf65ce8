/** Whether an upstream takes requests (`up`) or is taken out until a probe finds it answering (`out`). */
export type CircuitState = 'up' | 'out';

/** What one answer of an upstream says about its health. */
export type HealthSignal =
  /** It answered as it should: a stream, or a well-formed refusal (a 4xx, a 429) from a live server. */
  | 'answered'
  /** It failed: refused or reset the connection, timed out, answered 5xx, garbage or an auth refusal. */
  | 'failed';

/**
 * The health of one upstream, as a small state machine: `up` until `threshold` failures in a row (any
 * answer in between resets the count), then `out`; while out only a probe (`probeAnswered`) brings it back.
 * Peers' verdicts (`force`) move it directly. Every method returns true when the state changed.
 */
export class UpstreamCircuit {
  private current: CircuitState = 'up';
  private failures = 0;

  constructor(private readonly threshold: number) {}

  get state(): CircuitState {
    return this.current;
  }

  get up(): boolean {
    return this.current === 'up';
  }

  /** The outcome of a request sent while up (one sent just before the circuit opened may still report). */
  record(signal: HealthSignal): boolean {
    if (signal === 'answered') {
      this.failures = 0;
      return false;
    }
    if (this.current === 'out') return false;
    this.failures++;
    if (this.failures < this.threshold) return false;
    return this.set('out');
  }

  /** An active probe while out: an answer brings the upstream back, a failure keeps it out. */
  probeAnswered(): boolean {
    return this.set('up');
  }

  /** A verdict of another worker process, applied as is. */
  force(state: CircuitState): boolean {
    return this.set(state);
  }

  private set(state: CircuitState): boolean {
    this.failures = 0;
    if (this.current === state) return false;
    this.current = state;
    return true;
  }
}
