import { SetMetadata } from '@nestjs/common';

export const AUTH_POLICY = 'mgw:auth-policy';

/**
 * `required`: Bearer key needed. `public`: never. `models`: as MODELS_REQUIRE_AUTH says. `admin`: the
 * admin token (GATEWAY_ADMIN_TOKEN), and the route does not exist without one.
 */
export type AuthPolicy = 'required' | 'public' | 'models' | 'admin';

export const Auth = (policy: AuthPolicy) => SetMetadata(AUTH_POLICY, policy);
