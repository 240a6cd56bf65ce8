import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { whenClientGone } from '../client-gone.watcher';

/** Sets `headers` on a response whose head has not gone out yet; a committed one keeps its own. */
export function setPendingHeaders(res: ServerResponse, headers: Record<string, string>): void {
  if (res.headersSent) return;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
}

/** A request session's client that waits for one JSON answer, on Fastify's reply (the session's `JsonClient`). */
export class JsonReplyClient {
  readonly mode = 'json';

  constructor(private readonly reply: FastifyReply) {}

  get gone(): boolean {
    return this.reply.raw.destroyed;
  }

  /**
   * Fastify's own headers, not Node's: a response whose head Fastify writes from its object alone takes
   * Node's fast path, where `setHeader` on the raw response makes every header of the head go through
   * `setHeader` again (bench/README.md, "A budget's headers").
   */
  setHeaders(headers: Record<string, string>): void {
    if (this.reply.raw.headersSent) return;
    for (const name in headers) this.reply.header(name, headers[name]);
  }

  whenGone(onGone: () => void): void {
    whenClientGone(this.reply.raw, onGone);
  }

  async send(headers: Record<string, string>, body: unknown): Promise<void> {
    let reply = this.reply.status(200);
    for (const [name, value] of Object.entries(headers)) reply = reply.header(name, value);
    await reply.send(body);
  }
}
