import { ApiExtension } from '@nestjs/swagger';
import { eachHandler, mergeRouteConfig, routeConfigOf } from '../route-config';

/** The OpenAPI extension that carries a route's policy until the document turns it into `security`. */
export const AUTH_POLICY_EXTENSION = 'x-auth-policy';

/**
 * `required`: Bearer key needed. `public`: never. `models`: as MODELS_REQUIRE_AUTH says. `admin`: the
 * admin token (GATEWAY_ADMIN_TOKEN), and the route does not exist without one. `team-admin`: as `admin`, or
 * a team's admin token, whose handler then acts for that team only (`adminActorOf`).
 */
export type AuthPolicy = 'required' | 'public' | 'models' | 'admin' | 'team-admin';

const POLICIES: ReadonlySet<string> = new Set<AuthPolicy>([
  'required',
  'public',
  'models',
  'admin',
  'team-admin',
]);

interface AuthRouteConfig {
  authPolicy?: AuthPolicy;
}

function setPolicy(handler: object, policy: AuthPolicy): void {
  mergeRouteConfig(handler, { authPolicy: policy });
  ApiExtension(AUTH_POLICY_EXTENSION, policy)({}, '', { value: handler });
}

/**
 * A route's policy, carried in its Fastify route config so the `onRequest` hook knows it before any body
 * byte is read. On a controller it applies to every handler that does not declare its own (method
 * decorators run before class decorators, so those are already set). It merges into the route config,
 * so it goes above a `@RouteConfig` of the same handler (which replaces what is there).
 */
export function Auth(policy: AuthPolicy): ClassDecorator & MethodDecorator {
  return (target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) =>
    eachHandler(target, descriptor, (handler, own) => {
      if (own || (routeConfigOf(handler) as AuthRouteConfig | undefined)?.authPolicy === undefined) {
        setPolicy(handler, policy);
      }
    });
}

/** The policy of a route from its Fastify route config; a route that declares none requires a key. */
export function authPolicyOf(routeConfig: unknown): AuthPolicy {
  const policy = (routeConfig as AuthRouteConfig | undefined)?.authPolicy;
  return policy !== undefined && POLICIES.has(policy) ? policy : 'required';
}

/** The policy of a handler, as its route will be registered (for tests and startup checks). */
export function authPolicyOfHandler(handler: object): AuthPolicy {
  return authPolicyOf(routeConfigOf(handler));
}
