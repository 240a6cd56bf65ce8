import type { FastifyReply, FastifyRequest } from 'fastify';

/** Calls `onGone` if the client disconnects before the response was completely written. */
export function onClientGone(reply: FastifyReply, onGone: () => void): void {
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) onGone();
  });
}

export function requestIdOf(request: FastifyRequest): string {
  return String(request.id);
}
