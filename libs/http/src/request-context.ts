import type { FastifyRequest } from 'fastify';

export function requestIdOf(request: FastifyRequest): string {
  return String(request.id);
}
