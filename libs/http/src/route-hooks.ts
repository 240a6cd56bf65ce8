import type { onRequestHookHandler, RouteOptions } from 'fastify';

/**
 * Appends an `onRequest` hook to one route, from an `onRoute` hook: behaviour bound to a route once, when
 * it is registered, instead of being looked up on every request (and absent where it does not apply).
 */
export function appendOnRequest(route: RouteOptions, hook: onRequestHookHandler): void {
  const own = route.onRequest;
  route.onRequest = own === undefined ? [hook] : [...(Array.isArray(own) ? own : [own]), hook];
}
