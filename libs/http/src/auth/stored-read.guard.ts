import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requirePrincipal } from './request-principal';
import { StoredReadCounter } from './stored-read.counter';

/**
 * Routes that read or change stored objects (stored responses and completions, their items and messages,
 * a stream's resume): each call counts against its key's `rpm` before anything stored is read, and a key at
 * its limit gets OpenAI's `429` with `retry-after` and the `x-ratelimit-*` headers, as a create does.
 */
@Injectable()
export class StoredReadGuard implements CanActivate {
  constructor(@Inject(StoredReadCounter) private readonly counter: StoredReadCounter) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const headers = await this.counter.countStoredRead(requirePrincipal(http.getRequest<FastifyRequest>()));
    http.getResponse<FastifyReply>().headers(headers);
    return true;
  }
}
