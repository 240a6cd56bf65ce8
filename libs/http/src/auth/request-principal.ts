import type { FastifyRequest } from 'fastify';
import type { Principal } from '@mgw/access';

const principals = new WeakMap<FastifyRequest, Principal>();

/** Set by the `onRequest` authentication once the request's key is known. */
export function setPrincipal(request: FastifyRequest, principal: Principal): void {
  principals.set(request, principal);
}

/** The key a request runs as; null on routes that did not require one. */
export function principalOf(request: FastifyRequest): Principal | null {
  return principals.get(request) ?? null;
}

/** For handlers behind `@Auth('required')`: authentication has always set it there. */
export function requirePrincipal(request: FastifyRequest): Principal {
  const principal = principals.get(request);
  if (!principal) throw new Error('no principal on an authenticated route');
  return principal;
}
