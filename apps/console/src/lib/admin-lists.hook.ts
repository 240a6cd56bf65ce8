import { useEffect, useRef, useState } from 'preact/hooks';
import type { AdminActor } from './admin-actor.hook';
import { describeError } from './api.client';

/** When a view's lists are read: its admin token, whether it is shown, and who the token turned out to be. */
export interface ListsTrigger {
  adminToken: string;
  active: boolean;
  actor: AdminActor;
}

/**
 * An admin view's lists and its actions: the lists are read when the view is opened, the token changes or
 * its actor is known, and again after each action. Reads overlap (the actor is known a moment after the
 * token is typed), so a read that a newer one overtook changes nothing — neither the lists nor the notice.
 * The notice is the last action's failure, else the last read's: a read that succeeds after an action
 * failed does not hide why it failed; opening the view again or another token does.
 */
export function useAdminLists<T>(
  read: () => Promise<T>,
  apply: (lists: T) => void,
  { adminToken, active, actor }: ListsTrigger,
): { error: string | null; act: (work: () => Promise<unknown>) => Promise<void> } {
  const [actionError, setActionError] = useState<string | null>(null);
  const [readError, setReadError] = useState<string | null>(null);
  const latest = useRef(0);

  const reload = async (): Promise<void> => {
    const mine = ++latest.current;
    try {
      const lists = await read();
      if (mine !== latest.current) return;
      apply(lists);
      setReadError(null);
    } catch (e) {
      if (mine === latest.current) setReadError(describeError(e));
    }
  };

  useEffect(() => setActionError(null), [adminToken, active]);
  useEffect(() => {
    if (adminToken && active) void reload();
  }, [adminToken, active, actor]);

  const act = async (work: () => Promise<unknown>): Promise<void> => {
    let failure: string | null = null;
    try {
      await work();
    } catch (e) {
      failure = describeError(e);
    }
    setActionError(failure);
    await reload();
  };

  return { error: actionError ?? readError, act };
}
