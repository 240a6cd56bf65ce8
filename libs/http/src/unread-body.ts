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
  // Fastify asks to close after a body error; the discard below is what makes keeping it safe.
  reply.removeHeader('connection');
  incoming.resume();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  const stop = (): void => clearTimeout(timer);
  incoming.once('end', stop);
  socket.once('close', stop);
}
