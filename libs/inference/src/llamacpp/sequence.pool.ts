interface Waiter {
  grant: () => void;
  signal: AbortSignal;
  onAbort: () => void;
}

/**
 * Counts the free sequences of the shared llama.cpp context. Every choice of every job takes one for its
 * whole generation and gives it back in a `finally`; when all are taken, choices wait in arrival order,
 * and a waiting choice leaves the line as soon as its signal aborts.
 */
export class SequencePool {
  private free: number;
  private readonly waiters: Waiter[] = [];

  constructor(readonly size: number) {
    this.free = size;
  }

  get available(): number {
    return this.free;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  /** Resolves to a release function (safe to call more than once), or rejects with the abort reason. */
  async acquire(signal: AbortSignal): Promise<() => void> {
    signal.throwIfAborted();
    if (this.free > 0) {
      this.free--;
      return this.releaser();
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        signal,
        grant: () => {
          signal.removeEventListener('abort', waiter.onAbort);
          resolve(this.releaser());
        },
        onAbort: () => {
          const at = this.waiters.indexOf(waiter);
          if (at !== -1) this.waiters.splice(at, 1);
          const reason: unknown = signal.reason;
          reject(reason instanceof Error ? reason : new Error(String(reason)));
        },
      };
      signal.addEventListener('abort', waiter.onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      // Handed straight to the next waiter, so a newcomer cannot overtake the line.
      if (next !== undefined) next.grant();
      else this.free++;
    };
  }
}
