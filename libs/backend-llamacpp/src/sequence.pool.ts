/** What the pool remembers of a free slot: the tokens its kept sequence holds, and when it was last given back. */
export interface SlotHistory {
  readonly history: readonly number[];
  readonly lastUsed: number;
}

/** How many leading tokens `a` and `b` share. */
export function commonPrefixLength(a: readonly number[], b: readonly number[]): number {
  const end = Math.min(a.length, b.length);
  let i = 0;
  while (i < end && a[i] === b[i]) i++;
  return i;
}

/**
 * Which free slot a prompt runs on: the one whose history shares the longest prefix with it (the least
 * recently used among equals), as long as that saves more tokens than it erases of the history's rest (a
 * conversation's next turn saves nearly all of it; another conversation that only shares the template's
 * opening, or a system prompt shorter than what follows it, would evict a history to save little); else an
 * empty slot; else the least recently used. `matched` is the chosen slot's shared prefix.
 */
export function pickSlot(
  free: readonly SlotHistory[],
  prompt: readonly number[],
): { at: number; matched: number } {
  if (free.length === 0) throw new Error('no free slot to pick from');
  let best = { at: -1, matched: 0 };
  for (let at = 0; at < free.length; at++) {
    const { history, lastUsed } = free[at]!;
    const matched = commonPrefixLength(history, prompt);
    if (matched <= history.length - matched) continue;
    if (matched > best.matched || (matched === best.matched && lastUsed < free[best.at]!.lastUsed)) {
      best = { at, matched };
    }
  }
  if (best.at !== -1) return best;
  let fallback = free.findIndex((slot) => slot.history.length === 0);
  if (fallback === -1) {
    fallback = 0;
    for (let at = 1; at < free.length; at++) if (free[at]!.lastUsed < free[fallback]!.lastUsed) fallback = at;
  }
  return { at: fallback, matched: commonPrefixLength(free[fallback]!.history, prompt) };
}

/** A slot of the pool, held from `acquire` until `release`. */
export interface SequenceLease<S> {
  /** The sequence the slot kept from its last use (its KV cache intact), or null: none yet, or dropped. */
  readonly sequence: S | null;
  /** Leading tokens of the prompt the kept sequence already holds, by the slot's remembered history. */
  readonly matched: number;
  /**
   * Gives the slot back, keeping `kept` (the sequence and the tokens it now holds) for the next prompt, or
   * nothing (the caller disposed of it). Only the first call counts.
   */
  release(kept: { sequence: S; history: readonly number[] } | null): void;
}

interface Slot<S> {
  sequence: S | null;
  history: readonly number[];
  lastUsed: number;
}

interface Waiter<S> {
  grant: (slot: Slot<S>) => void;
  signal: AbortSignal;
  onAbort: () => void;
}

/**
 * The sequences of the shared llama.cpp context, never more than `size`. Every choice of every job takes
 * one for its whole generation and gives it back, and a sequence given back keeps its KV cache: the next
 * prompt goes to the free sequence that already holds the longest prefix of it (see pickSlot), so a
 * conversation's next turn evaluates only what is new. When all are taken, choices wait in arrival order,
 * and a waiting choice leaves the line as soon as its signal aborts.
 */
export class SequencePool<S> {
  private readonly free: Array<Slot<S>>;
  private readonly waiters: Array<Waiter<S>> = [];
  private clock = 0;

  constructor(readonly size: number) {
    this.free = Array.from({ length: size }, () => ({ sequence: null, history: [], lastUsed: 0 }));
  }

  get available(): number {
    return this.free.length;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  /** Resolves to a lease, or rejects with the abort reason. */
  async acquire(prompt: readonly number[], signal: AbortSignal): Promise<SequenceLease<S>> {
    signal.throwIfAborted();
    if (this.free.length > 0) {
      const { at } = pickSlot(this.free, prompt);
      return this.lease(this.free.splice(at, 1)[0]!, prompt);
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter<S> = {
        signal,
        grant: (slot) => {
          signal.removeEventListener('abort', waiter.onAbort);
          resolve(this.lease(slot, prompt));
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

  /** The sequences kept by free slots, forgotten: for the owner to dispose of with their context. */
  drain(): S[] {
    const kept: S[] = [];
    for (const slot of this.free) {
      if (slot.sequence !== null) kept.push(slot.sequence);
      slot.sequence = null;
      slot.history = [];
    }
    return kept;
  }

  private lease(slot: Slot<S>, prompt: readonly number[]): SequenceLease<S> {
    let released = false;
    return {
      sequence: slot.sequence,
      matched: slot.sequence === null ? 0 : commonPrefixLength(slot.history, prompt),
      release: (kept) => {
        if (released) return;
        released = true;
        slot.sequence = kept?.sequence ?? null;
        slot.history = kept?.history ?? [];
        slot.lastUsed = ++this.clock;
        const next = this.waiters.shift();
        // Handed straight to the next waiter, so a newcomer cannot overtake the line.
        if (next !== undefined) next.grant(slot);
        else this.free.push(slot);
      },
    };
  }
}
