import { useEffect, useState } from 'preact/hooks';
import type { ApiKeyView } from './admin.types';
import { ApiError, requestJson } from './api.client';

/**
 * Who the admin token is: the operator's (everything), a team's (its team's keys and spend only), or not
 * known (no token, a wrong one, the wrong listener: each view then shows the gateway's own error).
 */
export type AdminActor = { kind: 'unknown' } | { kind: 'operator' } | { kind: 'team'; teamId: string | null };

const TEAM_ID = /\bteam_[0-9a-f]{24}\b/;

/**
 * Asks the gateway: `GET /admin/teams` is the operator's alone and answers a team's token
 * `403 insufficient_permissions`. The team is then its keys' (a team token lists its team's keys only), or
 * the one its refusal names (it points to `GET /admin/teams/<its id>`) while it has no keys yet.
 */
export async function adminActorOf(token: string, signal?: AbortSignal): Promise<AdminActor> {
  try {
    await requestJson('/admin/teams', { token, signal });
    return { kind: 'operator' };
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 403 || error.code !== 'insufficient_permissions') {
      return { kind: 'unknown' };
    }
    const keys = await requestJson<{ data: ApiKeyView[] }>('/admin/keys', { token, signal }).catch(
      () => null,
    );
    const teamId =
      keys?.data.find((key) => key.team_id !== null)?.team_id ?? TEAM_ID.exec(error.message)?.[0];
    return { kind: 'team', teamId: teamId ?? null };
  }
}

/** The admin token's actor, asked again when the token changes (a moment after the last keystroke). */
export function useAdminActor(token: string): AdminActor {
  const [actor, setActor] = useState<AdminActor>({ kind: 'unknown' });
  useEffect(() => {
    setActor({ kind: 'unknown' });
    if (!token) return;
    const controller = new AbortController();
    const timer = setTimeout(() => {
      adminActorOf(token, controller.signal).then(
        (found) => {
          if (!controller.signal.aborted) setActor(found);
        },
        () => undefined,
      );
    }, 250);
    return () => {
      clearTimeout(timer);
      controller.abort();
    };
  }, [token]);
  return actor;
}
