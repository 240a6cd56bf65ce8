import { FASTIFY_ROUTE_CONFIG_METADATA } from '@nestjs/platform-fastify/constants';

/** A handler's Fastify route config as Nest will register it. */
export function routeConfigOf(handler: object): Record<string, unknown> | undefined {
  return Reflect.getMetadata(FASTIFY_ROUTE_CONFIG_METADATA, handler) as Record<string, unknown> | undefined;
}

/** Merges `patch` into a handler's route config (a `@RouteConfig` of the same handler replaces it all). */
export function mergeRouteConfig(handler: object, patch: Record<string, unknown>): void {
  Reflect.defineMetadata(FASTIFY_ROUTE_CONFIG_METADATA, { ...routeConfigOf(handler), ...patch }, handler);
}

/**
 * For a decorator that sets route config: `apply` to the decorated method (`own`: true), or on a
 * controller to each of its handlers (`own`: false; method decorators ran first, so a handler's own
 * setting is already there to keep).
 */
export function eachHandler(
  target: object,
  descriptor: PropertyDescriptor | undefined,
  apply: (handler: object, own: boolean) => void,
): void {
  if (descriptor) {
    apply(descriptor.value as object, true);
    return;
  }
  const prototype = (target as { prototype: object }).prototype;
  for (const name of Object.getOwnPropertyNames(prototype)) {
    const handler = Object.getOwnPropertyDescriptor(prototype, name)?.value as unknown;
    if (name !== 'constructor' && typeof handler === 'function') apply(handler, false);
  }
}
