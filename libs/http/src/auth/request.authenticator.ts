import { Inject, Injectable, Optional } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import {
  hashApiKey,
  KeyAuthenticator,
  looksLikeIssuedKey,
  looksLikeTeamToken,
  secretsEqual,
  TeamStore,
  type Authentication,
} from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import { GatewayError } from '@mgw/contracts';
import type { AuthPolicy } from './auth-policy.decorator';
import { setPrincipal } from './request-principal';
import { setAdminActor } from './admin-actor';

export { hashApiKey } from '@mgw/access';

const MAX_KEY_LENGTH = 512;
const BEARER = /^Bearer +(\S+) *$/i;

const REFUSALS: Record<Exclude<Authentication, { ok: true }>['reason'], string> = {
  unknown: 'Incorrect API key provided.',
  disabled: 'This API key is disabled.',
  expired: 'This API key has expired.',
};

/**
 * Every request's authentication, by its route's `@Auth` policy, from the headers alone (it runs in the
 * `onRequest` hook, before any body byte is read). Keys are looked up by their hash (bootstrap keys in
 * memory, issued keys in Redis through a short cache): no raw secret is ever compared. The admin token is
 * compared in constant time, and without one configured the admin routes do not exist. A team's admin token
 * is looked up by its hash on each use (admin requests are rare, and a revocation holds at once): it opens
 * the `team-admin` routes for its team, and is refused with a 403 on the operator's own.
 *
 * Synchronous unless an issued key must be looked up: the common cases cost no promise. A refusal is a
 * thrown (or rejected) `GatewayError`.
 */
@Injectable()
export class RequestAuthenticator {
  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(KeyAuthenticator) private readonly authenticator: KeyAuthenticator,
    @Optional() @Inject(TeamStore) private readonly teams?: TeamStore,
  ) {}

  /** Whether requests under this policy are checked at all (a route that is not needs no hook). */
  checks(policy: AuthPolicy): boolean {
    return !(policy === 'public' || (policy === 'models' && !this.config.modelsRequireAuth));
  }

  authenticate(request: FastifyRequest, policy: AuthPolicy): void | Promise<void> {
    if (!this.checks(policy)) return;
    if (policy === 'admin' || policy === 'team-admin') return this.checkAdmin(request, policy);
    const secret = this.bearer(request);
    const hash = hashApiKey(secret);
    const bootstrap = this.authenticator.bootstrapPrincipal(secret, hash);
    if (bootstrap) {
      setPrincipal(request, bootstrap);
      return;
    }
    // Anything not shaped like an issued key is refused without touching Redis.
    if (!looksLikeIssuedKey(secret)) throw GatewayError.invalidApiKey();
    return this.authenticator.authenticate(secret, hash).then((result) => {
      if (!result.ok) {
        throw new GatewayError(401, 'invalid_request_error', 'invalid_api_key', REFUSALS[result.reason]);
      }
      setPrincipal(request, result.principal);
    });
  }

  /**
   * The key: a Bearer token, or the `x-api-key` header Anthropic's clients send (Claude Code with
   * `ANTHROPIC_API_KEY`), on every route, so one key works with every SDK.
   */
  private bearer(request: FastifyRequest): string {
    const header = request.headers.authorization;
    if (header === undefined || header.trim() === '') {
      const apiKey = request.headers['x-api-key'];
      if (typeof apiKey === 'string' && apiKey.trim() !== '') {
        if (apiKey.length > MAX_KEY_LENGTH) throw GatewayError.invalidApiKey();
        return apiKey.trim();
      }
      throw GatewayError.missingApiKey();
    }
    const match = BEARER.exec(header);
    if (!match || match[1]!.length > MAX_KEY_LENGTH) throw GatewayError.invalidApiKey();
    return match[1]!;
  }

  private checkAdmin(request: FastifyRequest, policy: 'admin' | 'team-admin'): void | Promise<void> {
    const token = this.config.adminToken;
    if (token === undefined) {
      throw new GatewayError(
        404,
        'invalid_request_error',
        'unknown_url',
        `Unknown request URL: ${request.method} ${request.url.split('?')[0]}.`,
      );
    }
    const header = request.headers.authorization;
    if (header === undefined || header.trim() === '') {
      throw new GatewayError(
        401,
        'invalid_request_error',
        null,
        'The admin API needs the admin token in an Authorization header (Bearer GATEWAY_ADMIN_TOKEN).',
      );
    }
    const match = BEARER.exec(header);
    const presented = match && match[1]!.length <= MAX_KEY_LENGTH ? match[1]! : null;
    if (presented !== null && secretsEqual(presented, token)) {
      setAdminActor(request, { kind: 'operator' });
      return;
    }
    if (presented === null || !looksLikeTeamToken(presented) || !this.teams) throw this.badAdminToken();
    return this.teams.teamOfToken(presented).then(
      (teamId) => {
        if (teamId === null) throw this.badAdminToken();
        if (policy === 'admin') {
          throw new GatewayError(
            403,
            'invalid_request_error',
            'insufficient_permissions',
            `A team admin token manages its team's keys (/admin/keys) and reads its team ` +
              `(GET /admin/teams/${teamId}) only: ${request.method} ${request.url.split('?')[0]} needs the operator's admin token.`,
          );
        }
        setAdminActor(request, { kind: 'team', teamId });
      },
      (error: unknown) => {
        if (error instanceof GatewayError) throw error;
        throw GatewayError.serviceUnavailable('The key store is not reachable. Try again shortly.');
      },
    );
  }

  private badAdminToken(): GatewayError {
    return new GatewayError(
      401,
      'invalid_request_error',
      'invalid_admin_token',
      'Incorrect admin token provided.',
    );
  }
}
