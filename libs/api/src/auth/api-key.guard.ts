import { createHash } from 'node:crypto';
import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { GatewayConfig } from '@mgw/config';
import { GatewayError } from '@mgw/contracts';
import { AUTH_POLICY, type AuthPolicy } from './auth-policy.decorator';

const MAX_KEY_LENGTH = 512;

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Only hashes of the keys are held, and lookup is by hash: no raw secret is ever compared. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly keyHashes: ReadonlySet<string>;

  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(Reflector) private readonly reflector: Reflector,
  ) {
    this.keyHashes = new Set(config.apiKeys.map(hashApiKey));
  }

  canActivate(context: ExecutionContext): boolean {
    const policy =
      this.reflector.getAllAndOverride<AuthPolicy>(AUTH_POLICY, [context.getHandler(), context.getClass()]) ??
      'required';
    if (policy === 'public' || (policy === 'models' && !this.config.modelsRequireAuth)) return true;
    const header = context.switchToHttp().getRequest<FastifyRequest>().headers.authorization;
    if (header === undefined || header.trim() === '') throw GatewayError.missingApiKey();
    const match = /^Bearer +(\S+) *$/i.exec(header);
    if (!match || match[1]!.length > MAX_KEY_LENGTH || !this.keyHashes.has(hashApiKey(match[1]!))) {
      throw GatewayError.invalidApiKey();
    }
    return true;
  }
}
