// Runs a program that is not Node (the private redis-server) so that it too ends with the launcher:
// `node tether.mjs <command> [args…]` starts it, forwards SIGTERM/SIGINT/SIGHUP to it, stops it when its
// own stdin (the launcher's pipe) reaches EOF, and ends the way it ended (same exit code or signal).
import { spawn } from 'node:child_process';
import { setTimeout } from 'node:timers';

const KILL_AFTER_MS = 5_000;
const [command, ...args] = process.argv.slice(2);
const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });

const stop = (signal) => {
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
};
const signals = ['SIGTERM', 'SIGINT', 'SIGHUP'];
for (const signal of signals) process.on(signal, () => stop(signal));

process.stdin.on('data', () => {});
process.stdin.once('end', () => {
  stop('SIGTERM');
  setTimeout(() => stop('SIGKILL'), KILL_AFTER_MS).unref();
});
process.stdin.on('error', () => {});
process.stdin.unref?.();

child.once('error', (error) => {
  process.stderr.write(`could not start ${command}: ${error.message}\n`);
  process.exit(127);
});
child.once('exit', (code, signal) => {
  if (signal) {
    // Mirror the signal, so the launcher reports the real cause.
    for (const s of signals) process.removeAllListeners(s);
    process.kill(process.pid, signal);
  } else process.exit(code ?? 1);
});
