export interface StopMatchResult {
  /** Text that is now known not to be part of any stop sequence; safe to send. */
  emit: string;
  /** A stop sequence was found; nothing after it (nor the sequence itself) will ever be emitted. */
  stopped: boolean;
}

/**
 * Streaming stop-sequence detection for one choice. A stop sequence may arrive split over several
 * fragments, so any tail that could still become one is held back until the next fragment decides it.
 * Once stopped, the matcher swallows everything.
 */
export class StopSequenceMatcher {
  private readonly stops: readonly string[];
  private readonly longestStop: number;
  private held = '';
  private stopped = false;
  private matchedStop: string | null = null;

  constructor(stops: readonly string[]) {
    // An empty stop sequence would match before the first character and silence the whole output.
    this.stops = stops.filter((stop) => stop.length > 0);
    this.longestStop = this.stops.reduce((max, stop) => Math.max(max, stop.length), 0);
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** The stop sequence that ended the text (the earliest in it), or null. */
  get matched(): string | null {
    return this.matchedStop;
  }

  push(text: string): StopMatchResult {
    if (this.stopped) return { emit: '', stopped: true };
    if (this.stops.length === 0) return { emit: text, stopped: false };

    const buffer = this.held + text;
    let cut = -1;
    for (const stop of this.stops) {
      const at = buffer.indexOf(stop);
      if (at !== -1 && (cut === -1 || at < cut)) {
        cut = at;
        this.matchedStop = stop;
      }
    }
    if (cut !== -1) {
      this.stopped = true;
      this.held = '';
      return { emit: buffer.slice(0, cut), stopped: true };
    }

    // Hold the longest tail that is a proper prefix of some stop: it covers the earliest position at
    // which a stop could still begin, so everything before it can never be part of a match.
    const keep = this.partialMatchLength(buffer);
    this.held = buffer.slice(buffer.length - keep);
    return { emit: buffer.slice(0, buffer.length - keep), stopped: false };
  }

  /** At the natural end of the text the held tail can no longer complete a stop, so it is released. */
  flush(): string {
    const rest = this.stopped ? '' : this.held;
    this.held = '';
    return rest;
  }

  private partialMatchLength(buffer: string): number {
    for (let length = Math.min(this.longestStop - 1, buffer.length); length > 0; length--) {
      const tail = buffer.slice(buffer.length - length);
      if (this.stops.some((stop) => stop.startsWith(tail))) return length;
    }
    return 0;
  }
}
