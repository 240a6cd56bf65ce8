import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * How long a refused request's remaining body is read and discarded after the answer, before the
 * connection is dropped anyway (nginx's `lingering_time`, by time rather than bytes: discarding costs no
 * parse and no buffer, only the wire).
 */
export const LINGER_MS = 10_000;

/**
 * A request refused before its body was read (no key, too large, wrong type) must still leave the client
 * able to read the answer: closing a connection the client is still writing to makes the kernel reset it,
 * and a reset can destroy the answer before the client read it. So the answer keeps the connection, the
 * rest of the body is read and thrown away, and only a body that has not ended within `LINGER_MS` has its
 * connection dropped.
 */
export function discardUnreadBody(request: FastifyRequest, reply: FastifyReply): void {
  const incoming = request.raw;
  if (incoming.complete || incoming.destroyed) return;
  const socket = incoming.socket;
  keepConnectionAfterBodyError(reply);
  incoming.resume();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  const stop = (): void => clearTimeout(timer);
  incoming.once('end', stop);
  socket.once('close', stop);
}

/**
 * Fastify's body-error path puts `connection: close` on its reply (the client may still be sending); discarding
 * the rest of the body is what makes keeping the connection safe, so the answer says keep-alive instead.
 * Replaced, not removed: `reply.removeHeader` also removes the header from Node's response, and Node then
 * writes neither its own `Connection: keep-alive` nor the `Keep-Alive: timeout` hint. Left alone: a `close`
 * on Node's response itself (Fastify sets it there while the server drains), and a client that asked to close.
 */
function keepConnectionAfterBodyError(reply: FastifyReply): void {
  const raw = reply.raw;
  if (reply.getHeader('connection') !== 'close' || raw.hasHeader('connection') || !raw.shouldKeepAlive)
    return;
  reply.header('connection', 'keep-alive');
}
