import { createHash } from 'node:crypto';
import type { ExecutionContext } from '@nestjs/common';
import { loadGatewayConfig, type GatewayConfig } from '@mgw/config';
import {
  generateApiKey,
  generateTeamToken,
  KeyAuthenticator,
  type ApiKeyRecord,
  type KeyStore,
  type TeamRecord,
  type TeamStore,
} from '@mgw/access';
import { GatewayError } from '@mgw/contracts';
import { RouteConfig } from '@nestjs/platform-fastify';
import { FASTIFY_ROUTE_CONFIG_METADATA } from '@nestjs/platform-fastify/constants';
import { Auth, authPolicyOf, authPolicyOfHandler } from './auth-policy.decorator';
import { principalOf } from './request-principal';
import { adminActorOf } from './admin-actor';
import { hashApiKey, RequestAuthenticator } from './request.authenticator';
import { refusal } from '@mgw/testing';

const GOOD_KEY = 'sk-good-key-123';

class PlainController {
  handle(): void {}
}

class PolicyController {
  @Auth('public')
  health(): void {}

  @Auth('models')
  models(): void {}

  @Auth('required')
  chat(): void {}
}

@Auth('public')
class PublicController {
  handle(): void {}

  @Auth('required')
  secret(): void {}
}

@Auth('models')
class ModelsController {
  list(): void {}
}

/**
 * What the `onRequest` hook does for a route: take the policy its decorators put in the route config, then
 * authenticate the request by it (true once accepted, a thrown or rejected GatewayError when refused).
 */
class RouteCheck {
  constructor(private readonly authenticator: RequestAuthenticator) {}

  canActivate(context: ExecutionContext): true | Promise<true> {
    const policy = authPolicyOfHandler(context.getHandler());
    const result = this.authenticator.authenticate(context.switchToHttp().getRequest(), policy);
    return result ? result.then(() => true as const) : true;
  }
}

/** A check whose issued-key lookups find nothing (these tests exercise the bootstrap keys and the policies). */
function guardFor(config: GatewayConfig): RouteCheck {
  const store = { findByHash: () => Promise.resolve(null) } as unknown as KeyStore;
  const authenticator = new KeyAuthenticator(store, config.apiKeys, { ttlMs: 1000, maxEntries: 10 });
  return new RouteCheck(new RequestAuthenticator(config, authenticator));
}

interface FakeRequest {
  headers: Record<string, string>;
}

type Handler = () => void;
type ControllerClass = new () => object;

function contextFor(
  authorization: string | undefined,
  handler: Handler = PlainController.prototype.handle,
  controller: ControllerClass = PlainController,
): { context: ExecutionContext; readHeaders: jest.Mock<Record<string, string>, []> } {
  const headers: Record<string, string> = {};
  if (authorization !== undefined) headers.authorization = authorization;
  const readHeaders = jest.fn<Record<string, string>, []>(() => headers);
  const request = {} as FakeRequest;
  Object.defineProperty(request, 'headers', { get: readHeaders });
  const context = {
    getHandler: () => handler,
    getClass: () => controller,
    switchToHttp: () => ({ getRequest: () => request }),
  } as unknown as ExecutionContext;
  return { context, readHeaders };
}

function expectMissingKey(error: GatewayError): void {
  expect(error.status).toBe(401);
  expect(error.type).toBe('invalid_request_error');
  expect(error.code).toBeNull();
  expect(error.message).toContain('API key');
}

function expectInvalidKey(error: GatewayError): void {
  expect(error.status).toBe(401);
  expect(error.type).toBe('invalid_request_error');
  expect(error.code).toBe('invalid_api_key');
}

describe('RequestAuthenticator by route policy', () => {
  let config: GatewayConfig;
  let guard: RouteCheck;

  beforeEach(() => {
    config = loadGatewayConfig({ GATEWAY_API_KEYS: GOOD_KEY, NODE_ENV: 'test' });
    guard = guardFor(config);
  });

  describe('with the default (required) policy', () => {
    it.each([
      `Bearer ${GOOD_KEY}`,
      `bearer ${GOOD_KEY}`,
      `BEARER ${GOOD_KEY}`,
      `Bearer    ${GOOD_KEY}`,
      `Bearer ${GOOD_KEY}   `,
      `bearer   ${GOOD_KEY}  `,
    ])('accepts %p', (authorization) => {
      expect(guard.canActivate(contextFor(authorization).context)).toBe(true);
    });

    it('accepts any of several configured keys', () => {
      guard = guardFor(
        loadGatewayConfig({ GATEWAY_API_KEYS: `${GOOD_KEY}, sk-other-key-456`, NODE_ENV: 'test' }),
      );

      expect(guard.canActivate(contextFor(`Bearer ${GOOD_KEY}`).context)).toBe(true);
      expect(guard.canActivate(contextFor('Bearer sk-other-key-456').context)).toBe(true);
      expectInvalidKey(refusal(() => guard.canActivate(contextFor('Bearer sk-third-key-789').context)));
    });

    it('accepts a configured key of the longest allowed length (512 characters)', () => {
      const longKey = `sk-${'x'.repeat(509)}`;
      guard = guardFor(loadGatewayConfig({ GATEWAY_API_KEYS: longKey, NODE_ENV: 'test' }));

      expect(guard.canActivate(contextFor(`Bearer ${longKey}`).context)).toBe(true);
      expectInvalidKey(refusal(() => guard.canActivate(contextFor(`Bearer ${longKey}x`).context)));
    });

    it.each([
      ['a missing header', undefined],
      ['an empty header', ''],
      ['a whitespace-only header', '   '],
      ['a tab-only header', '\t'],
    ])('refuses %s as a missing API key (401, code null)', (_what, authorization) => {
      expectMissingKey(refusal(() => guard.canActivate(contextFor(authorization).context)));
    });

    it.each([
      ['a wrong key', 'Bearer sk-wrong-key-123'],
      ['a key differing only in case', `Bearer ${GOOD_KEY.toUpperCase()}`],
      ['a prefix of the key', `Bearer ${GOOD_KEY.slice(0, -1)}`],
      ['the key with a suffix', `Bearer ${GOOD_KEY}4`],
      ['the Basic scheme', `Basic ${Buffer.from(`user:${GOOD_KEY}`).toString('base64')}`],
      ['the Basic scheme with the raw key', `Basic ${GOOD_KEY}`],
      ['no scheme', GOOD_KEY],
      ['the scheme without a key', 'Bearer'],
      ['the scheme followed by spaces only', 'Bearer    '],
      ['the scheme glued to the key', `Bearer${GOOD_KEY}`],
      ['a key with an inner space', 'Bearer sk-good key-123'],
      ['two keys', `Bearer ${GOOD_KEY} ${GOOD_KEY}`],
      ['a 5000-character key', `Bearer ${'k'.repeat(5000)}`],
      ['a 5000-character key that starts with the good key', `Bearer ${GOOD_KEY}${'k'.repeat(4985)}`],
    ])('refuses %s as an invalid API key (401 invalid_api_key)', (_what, authorization) => {
      expectInvalidKey(refusal(() => guard.canActivate(contextFor(authorization).context)));
    });

    it('applies to an undecorated handler of an undecorated controller', () => {
      expectMissingKey(refusal(() => guard.canActivate(contextFor(undefined).context)));
    });

    it("applies to a handler decorated with @Auth('required')", () => {
      const { context } = contextFor(undefined, PolicyController.prototype.chat, PolicyController);
      expectMissingKey(refusal(() => guard.canActivate(context)));
    });
  });

  describe("with the 'public' policy", () => {
    it('lets a request without a header through, without reading its headers', () => {
      const { context, readHeaders } = contextFor(
        undefined,
        PolicyController.prototype.health,
        PolicyController,
      );

      expect(guard.canActivate(context)).toBe(true);
      expect(readHeaders).not.toHaveBeenCalled();
    });

    it('lets a request with a wrong key through', () => {
      const { context } = contextFor('Bearer nope', PolicyController.prototype.health, PolicyController);

      expect(guard.canActivate(context)).toBe(true);
    });

    it('applies when set on the controller class', () => {
      const { context } = contextFor(undefined, PublicController.prototype.handle, PublicController);

      expect(guard.canActivate(context)).toBe(true);
    });

    it('is overridden by a handler-level policy', () => {
      const { context } = contextFor(undefined, PublicController.prototype.secret, PublicController);

      expectMissingKey(refusal(() => guard.canActivate(context)));
    });
  });

  describe("with the 'models' policy", () => {
    it('requires a key when MODELS_REQUIRE_AUTH is left at its default', () => {
      expect(config.modelsRequireAuth).toBe(true);

      expectMissingKey(
        refusal(() =>
          guard.canActivate(
            contextFor(undefined, PolicyController.prototype.models, PolicyController).context,
          ),
        ),
      );
      expectInvalidKey(
        refusal(() =>
          guard.canActivate(
            contextFor('Bearer wrong-key-1', ModelsController.prototype.list, ModelsController).context,
          ),
        ),
      );
      expect(
        guard.canActivate(
          contextFor(`Bearer ${GOOD_KEY}`, PolicyController.prototype.models, PolicyController).context,
        ),
      ).toBe(true);
    });

    it("is public when MODELS_REQUIRE_AUTH='false'", () => {
      const open = loadGatewayConfig({
        GATEWAY_API_KEYS: GOOD_KEY,
        NODE_ENV: 'test',
        MODELS_REQUIRE_AUTH: 'false',
      });
      expect(open.modelsRequireAuth).toBe(false);
      guard = guardFor(open);

      expect(
        guard.canActivate(contextFor(undefined, PolicyController.prototype.models, PolicyController).context),
      ).toBe(true);
      expect(
        guard.canActivate(
          contextFor('Bearer wrong-key-1', ModelsController.prototype.list, ModelsController).context,
        ),
      ).toBe(true);
    });

    it("does not open other routes when MODELS_REQUIRE_AUTH='false'", () => {
      guard = guardFor(
        loadGatewayConfig({ GATEWAY_API_KEYS: GOOD_KEY, NODE_ENV: 'test', MODELS_REQUIRE_AUTH: 'false' }),
      );

      expectMissingKey(refusal(() => guard.canActivate(contextFor(undefined).context)));
      expectMissingKey(
        refusal(() =>
          guard.canActivate(contextFor(undefined, PolicyController.prototype.chat, PolicyController).context),
        ),
      );
    });
  });
});

describe('hashApiKey', () => {
  it('is the sha256 hex digest of the key', () => {
    expect(hashApiKey(GOOD_KEY)).toBe(createHash('sha256').update(GOOD_KEY, 'utf8').digest('hex'));
    // Known vector: sha256("abc").
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('is deterministic and 64 lowercase hex characters', () => {
    const hash = hashApiKey(GOOD_KEY);

    expect(hashApiKey(GOOD_KEY)).toBe(hash);
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('differs for different keys', () => {
    expect(hashApiKey('sk-key-one-1')).not.toBe(hashApiKey('sk-key-one-2'));
  });
});

describe('RequestAuthenticator with issued keys and the admin policy', () => {
  const ADMIN = 'admin-token-abcdefghijklmnopqrstuvwxyz';
  const issued = generateApiKey();
  const record = {
    id: 'key_0123456789abcdef01234567',
    name: 'ci',
    hash: hashApiKey(issued),
    prefix: issued.slice(0, 10),
    createdAt: 1,
    expiresAt: null,
    models: ['sim-chat'],
    rpm: 10,
    tpm: null,
    maxConcurrent: null,
    priority: 'high',
    disabled: false,
    revokedAt: null,
  } as ApiKeyRecord;

  class AdminController {
    @Auth('admin')
    keys(): void {}
  }

  function guardWith(env: Record<string, string>, found: ApiKeyRecord | null = record) {
    const config = loadGatewayConfig({ GATEWAY_API_KEYS: GOOD_KEY, NODE_ENV: 'test', ...env });
    const findByHash = jest.fn((hash: string) =>
      Promise.resolve(found && found.hash === hash ? found : null),
    );
    const authenticator = new KeyAuthenticator({ findByHash } as unknown as KeyStore, config.apiKeys, {
      ttlMs: 60_000,
      maxEntries: 10,
    });
    return {
      guard: new RouteCheck(new RequestAuthenticator(config, authenticator)),
      findByHash,
      authenticator,
    };
  }

  async function outcome(guard: RouteCheck, context: ExecutionContext): Promise<true | GatewayError> {
    try {
      return await guard.canActivate(context);
    } catch (error) {
      if (error instanceof GatewayError) return error;
      throw error;
    }
  }

  it('accepts an issued key by its hash and sets the principal, caching the lookup', async () => {
    const { guard, findByHash } = guardWith({});
    const headers = { authorization: `Bearer ${issued}` };
    const request = { headers };
    const context = {
      getHandler: () => PlainController.prototype.handle,
      getClass: () => PlainController,
      switchToHttp: () => ({ getRequest: () => request }),
    } as unknown as ExecutionContext;
    expect(await outcome(guard, context)).toBe(true);
    expect(principalOf(request as never)).toMatchObject({ keyId: record.id, rpm: 10, priority: 'high' });
    expect(await outcome(guard, context)).toBe(true);
    expect(findByHash).toHaveBeenCalledTimes(1);
  });

  it('looks an issued key up again once it was invalidated', async () => {
    const { guard, findByHash, authenticator } = guardWith({});
    const { context } = contextFor(`Bearer ${issued}`);
    await outcome(guard, context);
    authenticator.invalidate(hashApiKey(issued));
    await outcome(guard, context);
    expect(findByHash).toHaveBeenCalledTimes(2);
  });

  it.each([
    ['disabled', { ...record, disabled: true }, 'disabled'],
    ['expired', { ...record, expiresAt: 1000 }, 'expired'],
  ])('refuses a %s key with 401 invalid_api_key', async (_what, found, word) => {
    const { guard } = guardWith({}, found);
    const error = (await outcome(guard, contextFor(`Bearer ${issued}`).context)) as GatewayError;
    expect(error.status).toBe(401);
    expect(error.code).toBe('invalid_api_key');
    expect(error.message).toContain(word);
  });

  it('refuses an unknown well-formed key, and never asks Redis about a malformed one', async () => {
    const { guard, findByHash } = guardWith({});
    expect(
      ((await outcome(guard, contextFor(`Bearer ${generateApiKey()}`).context)) as GatewayError).code,
    ).toBe('invalid_api_key');
    expect(findByHash).toHaveBeenCalledTimes(1);
    expect(((await outcome(guard, contextFor('Bearer sk-gw-short').context)) as GatewayError).status).toBe(
      401,
    );
    expect(findByHash).toHaveBeenCalledTimes(1);
  });

  it('answers 404 on admin routes when no admin token is configured', async () => {
    const { guard } = guardWith({});
    const request = {
      headers: { authorization: `Bearer ${GOOD_KEY}` },
      method: 'GET',
      url: '/admin/keys?x=1',
    };
    const context = {
      getHandler: () => AdminController.prototype.keys,
      getClass: () => AdminController,
      switchToHttp: () => ({ getRequest: () => request }),
    } as unknown as ExecutionContext;
    const error = (await outcome(guard, context)) as GatewayError;
    expect(error.status).toBe(404);
    expect(error.code).toBe('unknown_url');
  });

  it.each([
    ['no header', undefined, 401],
    ['an API key', `Bearer ${GOOD_KEY}`, 401],
    ['an issued key', `Bearer ${issued}`, 401],
    ['a wrong token', `Bearer ${ADMIN}x`, 401],
    ['a prefix of the token', `Bearer ${ADMIN.slice(0, -1)}`, 401],
  ])('refuses %s on admin routes', async (_what, authorization, status) => {
    const { guard } = guardWith({ GATEWAY_ADMIN_TOKEN: ADMIN });
    const { context } = contextFor(authorization, AdminController.prototype.keys, AdminController);
    expect(((await outcome(guard, context)) as GatewayError).status).toBe(status);
  });

  it('accepts the admin token on admin routes', async () => {
    const { guard } = guardWith({ GATEWAY_ADMIN_TOKEN: ADMIN });
    const { context } = contextFor(`bearer ${ADMIN}`, AdminController.prototype.keys, AdminController);
    expect(await outcome(guard, context)).toBe(true);
  });

  it('refuses an admin token that is too short or is also an API key', () => {
    expect(() => loadGatewayConfig({ GATEWAY_ADMIN_TOKEN: 'short', NODE_ENV: 'test' })).toThrow(
      'GATEWAY_ADMIN_TOKEN',
    );
    expect(() =>
      loadGatewayConfig({ GATEWAY_ADMIN_TOKEN: ADMIN, GATEWAY_API_KEYS: ADMIN, NODE_ENV: 'test' }),
    ).toThrow('GATEWAY_ADMIN_TOKEN');
    expect(loadGatewayConfig({ GATEWAY_ADMIN_TOKEN: '  ', NODE_ENV: 'test' }).adminToken).toBeUndefined();
  });
});

describe('RequestAuthenticator with teams', () => {
  const ADMIN = 'admin-token-abcdefghijklmnopqrstuvwxyz';
  const TEAM = `team_${'ab'.repeat(12)}`;
  const issued = generateApiKey();
  const record = {
    id: 'key_0123456789abcdef01234567',
    name: 'ci',
    hash: hashApiKey(issued),
    prefix: issued.slice(0, 10),
    createdAt: 1,
    expiresAt: null,
    models: ['a', 'b'],
    rpm: 10,
    tpm: null,
    maxConcurrent: null,
    priority: 'high',
    weight: 1,
    disabled: false,
    revokedAt: null,
    teamId: TEAM,
  } as ApiKeyRecord;
  const team: TeamRecord = {
    id: TEAM,
    name: 'search',
    createdAt: 1,
    models: ['b', 'c'],
    rpm: 100,
    tpm: 1000,
    maxConcurrent: 4,
    priority: 'normal',
    weight: 3,
    budget: null,
  };
  const TEAM_TOKEN = generateTeamToken();

  class TeamAdminController {
    @Auth('team-admin')
    keys(): void {}

    @Auth('admin')
    models(): void {}
  }

  function guardWith(found: TeamRecord | null) {
    const config = loadGatewayConfig({ NODE_ENV: 'test', GATEWAY_ADMIN_TOKEN: ADMIN });
    const store = {
      findByHash: (hash: string) => Promise.resolve(hash === record.hash ? record : null),
      findTeam: (id: string) => Promise.resolve(found && found.id === id ? found : null),
    };
    const teams = { teamOfToken: (secret: string) => Promise.resolve(secret === TEAM_TOKEN ? TEAM : null) };
    const authenticator = new KeyAuthenticator(store as unknown as KeyStore, [], { ttlMs: 0, maxEntries: 1 });
    return new RouteCheck(new RequestAuthenticator(config, authenticator, teams as unknown as TeamStore));
  }

  function requestTo(authorization: string, handler: () => void) {
    const request = { headers: { authorization }, method: 'GET', url: '/admin/x' };
    const context = {
      getHandler: () => handler,
      getClass: () => TeamAdminController,
      switchToHttp: () => ({ getRequest: () => request }),
    } as unknown as ExecutionContext;
    return { request, context };
  }

  async function outcome(guard: RouteCheck, context: ExecutionContext): Promise<true | GatewayError> {
    try {
      return await guard.canActivate(context);
    } catch (error) {
      if (error instanceof GatewayError) return error;
      throw error;
    }
  }

  it("gives a key in a team the team's limits, its scope within the team's, its tier at most the team's", async () => {
    const { request, context } = requestTo(`Bearer ${issued}`, PlainController.prototype.handle);
    expect(await outcome(guardWith(team), context)).toBe(true);
    const principal = principalOf(request as never)!;
    expect([...principal.models!]).toEqual(['b']);
    expect(principal).toMatchObject({
      priority: 'normal',
      rpm: 10,
      team: { id: TEAM, rpm: 100, tpm: 1000, maxConcurrent: 4, weight: 3 },
    });
  });

  it('refuses a key whose team cannot be read, rather than leave it without its limits', async () => {
    const { context } = requestTo(`Bearer ${issued}`, PlainController.prototype.handle);
    const error = (await outcome(guardWith(null), context)) as GatewayError;
    expect([error.status, error.code]).toEqual([401, 'invalid_api_key']);
  });

  it("opens the team-admin routes to the operator and to a team's token, each as who it is", async () => {
    for (const [token, actor] of [
      [ADMIN, { kind: 'operator' }],
      [TEAM_TOKEN, { kind: 'team', teamId: TEAM }],
    ] as const) {
      const { request, context } = requestTo(`Bearer ${token}`, TeamAdminController.prototype.keys);
      expect(await outcome(guardWith(team), context)).toBe(true);
      expect(adminActorOf(request as never)).toEqual(actor);
    }
  });

  it("refuses a team's token on the operator's routes with 403, and an unknown one with 401", async () => {
    const denied = requestTo(`Bearer ${TEAM_TOKEN}`, TeamAdminController.prototype.models);
    const error = (await outcome(guardWith(team), denied.context)) as GatewayError;
    expect([error.status, error.code]).toEqual([403, 'insufficient_permissions']);
    expect(error.message).toContain("operator's admin token");
    const unknown = requestTo(`Bearer ${generateTeamToken()}`, TeamAdminController.prototype.keys);
    expect(((await outcome(guardWith(team), unknown.context)) as GatewayError).status).toBe(401);
  });
});

describe('@Auth in the Fastify route config', () => {
  it('puts the policy where the onRequest hook reads it, per handler and per controller', () => {
    expect(authPolicyOfHandler(PolicyController.prototype.health)).toBe('public');
    expect(authPolicyOfHandler(PolicyController.prototype.chat)).toBe('required');
    expect(authPolicyOfHandler(ModelsController.prototype.list)).toBe('models');
    expect(authPolicyOfHandler(PublicController.prototype.handle)).toBe('public');
    expect(authPolicyOfHandler(PublicController.prototype.secret)).toBe('required');
    expect(authPolicyOfHandler(PlainController.prototype.handle)).toBe('required');
  });

  it('keeps the rest of a route config, and reads an unknown policy as required', () => {
    class Configured {
      @Auth('public')
      @RouteConfig({ rateLimit: 5 })
      handle(): void {}
    }
    expect(Reflect.getMetadata(FASTIFY_ROUTE_CONFIG_METADATA, Configured.prototype.handle)).toEqual({
      rateLimit: 5,
      authPolicy: 'public',
    });
    expect(authPolicyOf({ authPolicy: 'everyone' })).toBe('required');
    expect(authPolicyOf(undefined)).toBe('required');
  });
});
