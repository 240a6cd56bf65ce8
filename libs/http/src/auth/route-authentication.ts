import type { FastifyInstance } from 'fastify';
import type { GatewayError } from '@mgw/contracts';
import { appendOnRequest } from '../route-hooks';
import { authPolicyOf } from './auth-policy.decorator';
import type { RequestAuthenticator } from './request.authenticator';

/**
 * Authentication as an `onRequest` hook of each route, bound to the route's `@Auth` policy when the route
 * is registered: it runs on the headers alone, before any body byte is read, so a refused request costs
 * neither a read nor a parse. A route that needs no check (public) gets no hook at all, and unknown URLs
 * (Fastify's not-found route) keep their 404. Must be called before the routes are registered.
 */
export function authenticateRoutes(fastify: FastifyInstance, authenticator: RequestAuthenticator): void {
  fastify.addHook('onRoute', (route) => {
    const policy = authPolicyOf(route.config);
    if (!authenticator.checks(policy)) return;
    // Callback style: the bootstrap-key case is synchronous and costs no promise.
    appendOnRequest(route, (request, _reply, done) => {
      let pending: void | Promise<void>;
      try {
        pending = authenticator.authenticate(request, policy);
      } catch (error) {
        return done(error as GatewayError);
      }
      if (pending === undefined) return done();
      pending.then(() => done(), done);
    });
  });
}
