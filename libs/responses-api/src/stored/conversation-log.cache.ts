import type { ConversationItem } from '../responses.types';

/** The most log bytes a gateway keeps parsed (about three times that in memory as objects). */
export const LOG_CACHE_MAX_BYTES = 8 * 1024 * 1024;
/** The most response ids whose log position a gateway remembers. */
export const LOG_HINTS_MAX = 10_000;

/** Where a response's history was last seen: a log and a byte offset this cache holds the items up to. */
export interface LogHint {
  log: string;
  end: number;
}

interface CachedLog {
  /** The items of the log's first `end` bytes, for the largest `end` seen. */
  items: ConversationItem[];
  end: number;
  /** Each offset seen (a turn's end) and how many items lie before it. */
  counts: Map<number, number>;
}

/**
 * Conversation logs this gateway has read, parsed: a log's first n bytes never change (logs only grow, and a
 * log's name is never reused), so a turn that continues a conversation read here fetches and parses only the
 * bytes it lacks. Bounded by LOG_CACHE_MAX_BYTES of log text (least recently used first out) and LOG_HINTS_MAX
 * remembered ids. Items handed out are shared: callers do not change them.
 */
export class ConversationLogCache {
  private readonly logs = new Map<string, CachedLog>();
  private readonly hints = new Map<string, LogHint>();
  private bytes = 0;

  constructor(
    private readonly maxBytes = LOG_CACHE_MAX_BYTES,
    private readonly maxHints = LOG_HINTS_MAX,
  ) {}

  /** Where response `id`'s history can start from, if this cache holds part of it. */
  hintFor(id: string): LogHint | null {
    const hint = this.hints.get(id);
    if (hint === undefined || this.itemsAt(hint) === null) return null;
    return hint;
  }

  /** The items before `hint.end` in `hint.log`, or null when not held. */
  itemsAt(hint: LogHint): ConversationItem[] | null {
    const cached = this.logs.get(hint.log);
    const count = cached?.counts.get(hint.end);
    if (cached === undefined || count === undefined) return null;
    this.logs.delete(hint.log);
    this.logs.set(hint.log, cached);
    return cached.items.slice(0, count);
  }

  /** A turn continuing `previousId` most likely appended to its log: it starts from the same place. */
  inherit(id: string, previousId: string): void {
    const hint = this.hints.get(previousId);
    if (hint !== undefined) this.remember(id, hint);
  }

  /** Response `id`'s history is `items`, the first `end` bytes of `log`. */
  store(id: string, log: string, end: number, items: ConversationItem[]): void {
    this.remember(id, { log, end });
    const cached = this.logs.get(log);
    if (cached !== undefined && cached.end >= end) {
      cached.counts.set(end, items.length);
      return;
    }
    if (cached !== undefined) {
      this.logs.delete(log);
      this.bytes -= cached.end;
    }
    const counts = cached?.counts ?? new Map<number, number>();
    counts.set(end, items.length);
    this.logs.set(log, { items, end, counts });
    this.bytes += end;
    for (const [name, oldest] of this.logs) {
      if (this.bytes <= this.maxBytes) break;
      this.logs.delete(name);
      this.bytes -= oldest.end;
    }
  }

  private remember(id: string, hint: LogHint): void {
    this.hints.delete(id);
    this.hints.set(id, hint);
    if (this.hints.size > this.maxHints) this.hints.delete(this.hints.keys().next().value!);
  }
}
