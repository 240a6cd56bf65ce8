import { GatewayError } from '@mgw/contracts';

/** A class of errors a refusal is expected to be (GatewayError unless told). */
type ErrorClass<E extends Error> = abstract new (...args: never[]) => E;

/**
 * The error of class `kind` that `run` throws: a test then checks its status, code and words. An error of
 * another class passes through as it is, and a `run` that throws nothing fails the test.
 */
export function refusal<E extends Error = GatewayError>(
  run: () => unknown,
  kind: ErrorClass<E> = GatewayError as unknown as ErrorClass<E>,
): E {
  try {
    run();
  } catch (error) {
    if (error instanceof kind) return error;
    throw error;
  }
  throw new Error(`expected a ${kind.name}, but nothing was thrown`);
}

/** As `refusal`, for work that rejects: a promise, or a function whose result is awaited. */
export async function refusalOf<E extends Error = GatewayError>(
  work: Promise<unknown> | (() => unknown),
  kind: ErrorClass<E> = GatewayError as unknown as ErrorClass<E>,
): Promise<E> {
  try {
    await (typeof work === 'function' ? work() : work);
  } catch (error) {
    if (error instanceof kind) return error;
    throw error;
  }
  throw new Error(`expected a ${kind.name}, but the work succeeded`);
}
