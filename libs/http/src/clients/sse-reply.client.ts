import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { whenClientGone } from '../client-gone.watcher';
import { SseWriter, type SseWriterOptions } from '../sse.writer';

export interface SseReplyClientOptions extends Omit<SseWriterOptions, 'onOverflow'> {
  /** Called with the response once the stream's 200 went out (an active stream's gauge). */
  onOpen?: (res: ServerResponse) => void;
}

/**
 * A request session's client of a stream of server-sent events, on Fastify's reply (the session's
 * `StreamClient`): the renderer writes to `events` from the start, and `open` takes the connection over from
 * Fastify (`hijack`) and sends the 200. A client that leaves, or stops reading until its stream is cut, is
 * reported once by each cause; the session hears it as the same event.
 */
export class SseReplyClient {
  readonly mode = 'stream';
  readonly events: SseWriter;
  private readonly onOpen: ((res: ServerResponse) => void) | undefined;
  private onGone: (() => void) | null = null;
  private opened = false;

  constructor(
    private readonly reply: FastifyReply,
    options: SseReplyClientOptions,
  ) {
    const { onOpen, ...writer } = options;
    this.onOpen = onOpen;
    this.events = new SseWriter(reply.raw, { ...writer, onOverflow: () => this.onGone?.() });
  }

  get gone(): boolean {
    return this.reply.raw.destroyed;
  }

  /** On the response itself, which the stream takes over from Fastify; a stream already open keeps its own. */
  setHeaders(headers: Record<string, string>): void {
    const { raw } = this.reply;
    if (raw.headersSent) return;
    for (const name in headers) raw.setHeader(name, headers[name]!);
  }

  whenGone(onGone: () => void): void {
    this.onGone = onGone;
    whenClientGone(this.reply.raw, () => {
      this.events.close();
      onGone();
    });
  }

  open(headers: Record<string, string>): boolean {
    const { raw } = this.reply;
    if (this.opened || raw.destroyed) return false;
    this.opened = true;
    this.reply.hijack();
    this.events.open(headers);
    this.onOpen?.(raw);
    return true;
  }
}
