import type { ServerResponse } from 'node:http';

/**
 * Calls `onClose` once when the response closes, with `gone` true when the client left before the response
 * was completely written. A response that has closed already is reported at once (synchronously): a
 * listener registered after the 'close' event would never hear it, and the work for that client would go on.
 */
export function whenResponseCloses(res: ServerResponse, onClose: (gone: boolean) => void): void {
  if (res.closed || res.destroyed) {
    onClose(!res.writableFinished);
    return;
  }
  res.once('close', () => onClose(!res.writableFinished));
}

/**
 * Calls `onGone` once if the client leaves before the response was completely written — at once if it has
 * left already. The one way the gateway learns that a client is gone.
 */
export function whenClientGone(res: ServerResponse, onGone: () => void): void {
  whenResponseCloses(res, (gone) => {
    if (gone) onGone();
  });
}
