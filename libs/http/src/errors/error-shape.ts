import type { GatewayError } from '@mgw/contracts';
import { eachHandler, mergeRouteConfig } from '../route-config';

/** How a wire protocol answers an error: its status, its body and the headers it adds. */
export interface ErrorShape {
  statusOf(error: GatewayError): number;
  bodyOf(error: GatewayError): unknown;
  headersOf?(requestId: string): Record<string, string>;
}

interface ErrorShapeRouteConfig {
  errorShape?: ErrorShape;
}

/**
 * The error shape of a route's protocol, carried in its Fastify route config: the exception filter answers
 * every error of the route in it, those raised before the handler runs (authentication in the `onRequest`
 * hook, the body's parsing and size) as well as the handler's own. On a controller it applies to every
 * handler. It merges into the route config, so it goes above a `@RouteConfig` of the same handler.
 */
export function ErrorsShapedAs(shape: ErrorShape): ClassDecorator & MethodDecorator {
  return (target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) =>
    eachHandler(target, descriptor, (handler) => mergeRouteConfig(handler, { errorShape: shape }));
}

/** The error shape a route declares, if any. */
export function errorShapeOf(routeConfig: unknown): ErrorShape | undefined {
  return (routeConfig as ErrorShapeRouteConfig | undefined)?.errorShape;
}
