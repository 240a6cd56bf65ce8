import { SetMetadata } from '@nestjs/common';

export const AUTH_POLICY = 'mgw:auth-policy';

/** `required`: Bearer key needed. `public`: never. `models`: as MODELS_REQUIRE_AUTH says. */
export type AuthPolicy = 'required' | 'public' | 'models';

export const Auth = (policy: AuthPolicy) => SetMetadata(AUTH_POLICY, policy);
