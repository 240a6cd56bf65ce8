import type { ServerResponse } from 'node:http';

export interface SseWriterOptions {
  /** Unread bytes allowed before a stuck client's stream is ended. */
  bufferLimitBytes: number;
  /** A `: keep-alive` comment after this much silence, so proxies do not cut idle streams (0 = off). */
  keepAliveMs: number;
  /** Called once when the client stopped reading and the stream was cut. */
  onOverflow: () => void;
  /**
   * How long an ended stream may take to reach a client before its connection is dropped: a client that
   * stopped reading would otherwise hold the socket and its unsent bytes forever (0 = wait forever).
   */
  flushTimeoutMs?: number;
  /**
   * The protocol's last line before the connection ends normally (`done`): the chat completions protocol's
   * `data: [DONE]` (the default); null for protocols whose final event is named and ends the stream itself.
   */
  endLine?: string | null;
  /** The event written after `keepAliveMs` of silence, with its blank line (default `: keep-alive`). */
  keepAlive?: string;
}

/** The end of an OpenAI chat completions stream. */
export const CHAT_STREAM_END = 'data: [DONE]';

/**
 * Server-sent events on a raw response: headers flushed at once, one event per `data:` line written the
 * moment it exists (no buffering, no coalescing), and a hard cap on what a slow reader can make us hold.
 * Events are anonymous (`data:` only, as chat completions streams are) or named (`event: <name>`, as the
 * Responses and Anthropic Messages streams are); `done` ends with the protocol's own last line.
 */
export class SseWriter {
  /** Replies can race the enqueue acknowledgement; events produced before `open` wait here. */
  private early: string[] | null = [];
  private ended = false;
  private lastWrite = Date.now();
  private keepAlive: NodeJS.Timeout | undefined;
  /** The end line with its event separator, or '' when the protocol has none. */
  private readonly end: string;

  constructor(
    private readonly res: ServerResponse,
    private readonly options: SseWriterOptions,
  ) {
    const endLine = options.endLine === undefined ? CHAT_STREAM_END : options.endLine;
    this.end = endLine === null ? '' : `${endLine}\n\n`;
  }

  open(headers: Record<string, string>): void {
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      ...headers,
    });
    this.res.flushHeaders();
    const early = this.early!.join('');
    this.early = null;
    if (early.length > 0) this.push(early);
    if (this.ended) {
      this.res.end();
      this.dropIfNeverFlushed();
      return;
    }
    if (this.options.keepAliveMs > 0) {
      const keepAlive = this.options.keepAlive ?? ': keep-alive\n\n';
      this.keepAlive = setInterval(() => {
        if (Date.now() - this.lastWrite >= this.options.keepAliveMs) this.write(keepAlive);
      }, this.options.keepAliveMs);
      this.keepAlive.unref();
    }
  }

  /**
   * One event; `json` is an already-serialised JSON document. With `id`, the event carries it (`id:`), the
   * position a client resumes after (`Last-Event-ID`).
   */
  data(json: string, id?: number): void {
    this.write(id === undefined ? `data: ${json}\n\n` : `id: ${id}\ndata: ${json}\n\n`);
  }

  /** One named event (`event: <name>`), with its id when given, as `data` writes anonymous ones. */
  event(name: string, json: string, id?: number): void {
    this.write(
      id === undefined ? `event: ${name}\ndata: ${json}\n\n` : `event: ${name}\nid: ${id}\ndata: ${json}\n\n`,
    );
  }

  /**
   * The normal end: the protocol's end line (`data: [DONE]` for chat, with its event id on a resumable
   * stream), then the connection ends. For a protocol without an end line, only the connection ends.
   */
  done(id?: number): void {
    if (this.end !== '') this.write(id === undefined ? this.end : `id: ${id}\n${this.end}`);
    this.close();
  }

  /** A failure after the 200 went out: the error as data, then the end — never a clean-looking end alone. */
  fail(errorJson: string): void {
    this.write(`data: ${errorJson}\n\n${this.end}`);
    this.close();
  }

  close(): void {
    if (this.ended) return;
    this.ended = true;
    clearInterval(this.keepAlive);
    if (this.early === null && !this.res.destroyed) {
      this.res.end();
      this.dropIfNeverFlushed();
    }
  }

  private dropIfNeverFlushed(): void {
    const timeoutMs = this.options.flushTimeoutMs ?? 0;
    if (timeoutMs <= 0 || this.res.writableFinished) return;
    const timer = setTimeout(() => this.res.destroy(), timeoutMs);
    timer.unref();
    this.res.once('finish', () => clearTimeout(timer));
    this.res.once('close', () => clearTimeout(timer));
  }

  private write(text: string): void {
    if (this.ended) return;
    if (this.early !== null) this.early.push(text);
    else this.push(text);
  }

  private push(text: string): void {
    if (this.res.destroyed) return;
    this.lastWrite = Date.now();
    this.res.write(text);
    if (this.res.writableLength > this.options.bufferLimitBytes) {
      this.ended = true;
      clearInterval(this.keepAlive);
      this.res.destroy();
      this.options.onOverflow();
    }
  }
}
