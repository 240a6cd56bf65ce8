import { AsyncLocalStorage } from 'node:async_hooks';

/** Fields every log line written while handling one job (or request) carries, e.g. its `requestId`. */
export type LogContext = Record<string, string>;

const storage = new AsyncLocalStorage<LogContext>();

/** Runs `fn` so that every log line it writes, however deep or late, carries `fields`. */
export function withLogContext<T>(fields: LogContext, fn: () => T): T {
  return storage.run({ ...storage.getStore(), ...fields }, fn);
}

export function currentLogContext(): LogContext | undefined {
  return storage.getStore();
}
