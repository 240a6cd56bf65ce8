/** A promise with its settling functions outside it: a test decides when a fake's reply arrives. */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (reason: unknown) => void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every already-settled promise callback run (and whatever a `setImmediate` queued before it). */
export const settle = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));
