import type { JsonClient } from '@mgw/session';

/**
 * A session's JSON client that is no HTTP reply: it keeps the answer for its caller (a batch line). It
 * never leaves, so its request runs to its end.
 */
export class CapturedAnswerClient implements JsonClient {
  readonly mode = 'json';
  readonly gone = false;
  private answer: { body: unknown } | null = null;

  setHeaders(): void {}

  whenGone(): void {}

  send(_headers: Record<string, string>, body: unknown): Promise<void> {
    this.answer = { body };
    return Promise.resolve();
  }

  /** The answer sent, or undefined when none was. */
  get body(): unknown {
    return this.answer?.body;
  }

  get answered(): boolean {
    return this.answer !== null;
  }
}
