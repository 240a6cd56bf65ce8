// Preloaded into every app `npm start` runs (`node --import`). The launcher holds the write end of the app's
// stdin pipe and never writes to it; the kernel closes that end when the launcher dies, however it dies
// (even SIGKILL, which no handler sees). The app then gets EOF on stdin and stops as on SIGTERM, so it does
// not live on as an orphan holding its ports. Linux's PR_SET_PDEATHSIG is not reachable from Node, and a
// pipe also works on macOS.

// An app that ignores its SIGTERM or stalls in its drain still goes, this long after the launcher.
import { setTimeout } from 'node:timers';

const GRACE_MS = 5_000;

const stdin = process.stdin;
stdin.on('data', () => {}); // nothing is ever written; reading only makes the EOF visible
stdin.once('end', () => {
  process.kill(process.pid, 'SIGTERM');
  setTimeout(() => process.exit(1), GRACE_MS).unref();
});
stdin.on('error', () => {});
// The pipe must not keep the app alive once it has finished by itself.
stdin.unref?.();
