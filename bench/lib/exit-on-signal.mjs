// Preloaded (`--import`) into apps run with --cpu-prof: Nest re-raises SIGTERM after its shutdown hooks, and
// a process that dies of a signal never writes its profile. With this listener in place the re-raised signal
// ends the process through process.exit(), which does.
import { setTimeout } from 'node:timers';

let signals = 0;
process.on('SIGTERM', () => {
  if (++signals > 1) process.exit(0);
  setTimeout(() => process.exit(0), 10_000).unref();
});
