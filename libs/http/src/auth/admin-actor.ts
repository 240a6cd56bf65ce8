import type { FastifyRequest } from 'fastify';

/** Who calls the admin API: the operator (GATEWAY_ADMIN_TOKEN), or a team's admin token for its team. */
export type AdminActor = { kind: 'operator' } | { kind: 'team'; teamId: string };

const actors = new WeakMap<FastifyRequest, AdminActor>();

/** Set by the `onRequest` authentication of an admin route. */
export function setAdminActor(request: FastifyRequest, actor: AdminActor): void {
  actors.set(request, actor);
}

/** For handlers behind `@Auth('admin')` or `@Auth('team-admin')`: authentication has always set it there. */
export function adminActorOf(request: FastifyRequest): AdminActor {
  const actor = actors.get(request);
  if (!actor) throw new Error('no admin actor on an admin route');
  return actor;
}
