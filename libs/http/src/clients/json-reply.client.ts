import type { FastifyReply } from 'fastify';
import { whenClientGone } from '../client-gone.watcher';

/** A request session's client that waits for one JSON answer, on Fastify's reply (the session's `JsonClient`). */
export class JsonReplyClient {
  readonly mode = 'json';

  constructor(private readonly reply: FastifyReply) {}

  get gone(): boolean {
    return this.reply.raw.destroyed;
  }

  /**
   * On Fastify's reply, not Node's response: Node writes the head from Fastify's header object as it is,
   * while a single header set on the response first sends every header of the head through `setHeader`
   * again (bench/README.md, "A budget's headers"). A response already sent keeps its own.
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
