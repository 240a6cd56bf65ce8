// The launcher's children: starting them, watching them, and stopping them in stages.
import { spawn } from 'node:child_process';
import { clearTimeout, setTimeout } from 'node:timers';
import { flushPending, pipeLines } from './output.mjs';

// The gateway and the workers drain open work for up to 30 s by default (GATEWAY_/WORKER_DRAIN_TIMEOUT_MS).
const STOP_TIMEOUT_MS = 45_000;
const KILL_WAIT_MS = 2_000;
// A crashed app is started again after a delay that doubles with each restart inside the window.
const RESTART_BASE_DELAY_MS = 500;
const RESTART_MAX_DELAY_MS = 10_000;
// Wrappers such as npm forward the terminal's SIGINT to us although the terminal already sent it to our whole
// process group; a repeat this soon is that echo, not a second Ctrl-C.
const SIGNAL_ECHO_MS = 500;

/** Resolves to true if `promise` settled within `ms`, false otherwise. */
export async function within(promise, ms) {
  let timer;
  const timeout = new Promise((resolve) => (timer = setTimeout(resolve, ms, false)));
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export const describeExit = ({ code, signal }) =>
  signal ? `was killed by ${signal}` : `exited with code ${code}`;
const names = (entries) => entries.map((e) => e.name).join(', ');

/**
 * Owns every process the launcher starts and the launcher's own ending: it restarts a crashed child with
 * backoff, gives up on a crash loop, and is the one place that decides to stop, stops the children highest
 * stage first, and exits.
 */
export class Supervisor {
  /** Every process we started, until the launcher exits. */
  #managed = [];
  #stopping = null;
  #stopRequestedAt = 0;
  /** Per child name, when it was restarted, for the crash-loop window. */
  #restarts = new Map();
  #restartCount = new Map();
  #pendingRestarts = new Set();

  /**
   * `restartLimit` restarts of one child within `restartWindowMs` are allowed; one more crash inside the
   * window is a crash loop, which stops the whole stack.
   */
  constructor({ root, env, say, complain, restartLimit = 5, restartWindowMs = 60_000 }) {
    this.root = root;
    this.env = env;
    this.say = say;
    this.complain = complain;
    this.restartLimit = restartLimit;
    this.restartWindowMs = restartWindowMs;
  }

  get stopping() {
    return this.#stopping !== null;
  }

  /** Signals, crashes of the launcher and its exit all end in an orderly stop, or at least in no orphans. */
  installHandlers() {
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, (s) => this.#onSignal(s));
    const fatal = (error) => this.fatal(error);
    process.on('uncaughtException', fatal);
    process.on('unhandledRejection', fatal);
    // Last line of defence: whatever path ends the launcher, no child outlives it.
    process.on('exit', () => {
      flushPending();
      for (const entry of this.#managed) this.#signal(entry, 'SIGKILL');
    });
  }

  /**
   * Starts a child. With `piped`, its output is tagged and it gets a process group of its own: the terminal's
   * Ctrl-C then reaches only the launcher, which stops the apps in order instead of all at once. A piped
   * child's stdin is a pipe the launcher never writes to: its EOF tells the child that the launcher is gone
   * (see exit-with-launcher.mjs and tether.mjs).
   */
  start(proc, command, args, { piped = true, childEnv = this.env } = {}) {
    const child = spawn(command, args, {
      cwd: this.root,
      env: childEnv,
      stdio: piped ? ['pipe', 'pipe', 'pipe'] : 'inherit',
      detached: piped,
    });
    if (piped) child.stdin.on('error', () => {}); // a child that exits closes its end first
    const spec = { proc, command, args, piped, childEnv };
    const entry = { ...proc, child, running: true, grouped: piped, spec };
    child.once('exit', () => (entry.running = false));
    // `close` comes after the output is drained, so a crash message is printed before we report the exit.
    entry.closed = new Promise((resolve) => {
      child.once('close', (code, signal) => resolve({ code, signal }));
      child.once('error', (error) => {
        entry.running = false;
        this.complain(`could not start ${proc.name}: ${error.message}`);
        resolve({ code: null, signal: null });
      });
    });
    if (piped) {
      pipeLines(child.stdout, process.stdout, proc);
      pipeLines(child.stderr, process.stderr, proc);
    }
    this.#managed.push(entry);
    return entry;
  }

  /**
   * An app or the private Redis ending before we asked it to is started again after a backoff, while the
   * others keep serving; a crash loop (more than `restartLimit` restarts within `restartWindowMs`) stops
   * everything with exit code 1.
   */
  keepRunning(entry) {
    void entry.closed.then((result) => {
      if (this.#stopping) return;
      const cause = describeExit(result);
      const now = Date.now();
      const recent = (this.#restarts.get(entry.name) ?? []).filter((at) => now - at < this.restartWindowMs);
      if (recent.length >= this.restartLimit) {
        this.complain(
          `${entry.name} ${cause}, after ${recent.length} restarts within ${this.restartWindowMs / 1000} s: ` +
            'a crash loop; stopping everything (see its output above)',
        );
        void this.shutdown(1);
        return;
      }
      recent.push(now);
      this.#restarts.set(entry.name, recent);
      const count = (this.#restartCount.get(entry.name) ?? 0) + 1;
      this.#restartCount.set(entry.name, count);
      const delayMs = Math.min(RESTART_BASE_DELAY_MS * 2 ** (recent.length - 1), RESTART_MAX_DELAY_MS);
      this.complain(
        `${entry.name} (pid ${entry.child.pid}) ${cause}; restart ${count} in ${delayMs} ms ` +
          `(${recent.length} of ${this.restartLimit} within ${this.restartWindowMs / 1000} s)`,
      );
      const timer = setTimeout(() => {
        this.#pendingRestarts.delete(timer);
        if (this.#stopping) return;
        const { proc, command, args, piped, childEnv } = entry.spec;
        const next = this.start(proc, command, args, { piped, childEnv });
        // In the dead one's place: the stop order and the list's size stay as they were.
        this.#managed.pop();
        this.#managed.splice(this.#managed.indexOf(entry), 1, next);
        this.say(`restarted ${entry.name} (pid ${next.child.pid})`);
        this.keepRunning(next);
      }, delayMs);
      this.#pendingRestarts.add(timer);
    });
  }

  /** Stops everything, highest stage first, and exits with `exitCode`. Only the first call counts. */
  shutdown(exitCode) {
    this.#stopping ??= (async () => {
      for (const timer of this.#pendingRestarts) clearTimeout(timer);
      const stages = [...new Set(this.#managed.map((e) => e.stage))].sort((a, b) => b - a);
      for (const stage of stages) {
        const group = this.#managed.filter((e) => e.stage === stage && e.running);
        if (group.length > 0) await this.#stopGroup(group);
      }
      process.exit(exitCode);
    })();
    return this.#stopping;
  }

  fatal(error) {
    this.complain(
      `internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    if (this.#stopping) void this.#forceStop(1);
    else void this.shutdown(1);
  }

  #signal(entry, sig) {
    if (!entry.running) return;
    try {
      // SIGKILL goes to the whole group so nothing the child started survives it; SIGTERM only to the child,
      // which is responsible for stopping its own helpers.
      process.kill(sig === 'SIGKILL' && entry.grouped ? -entry.child.pid : entry.child.pid, sig);
    } catch {
      // already gone
    }
  }

  async #stopGroup(group) {
    this.say(`stopping ${names(group)}…`);
    for (const entry of group) this.#signal(entry, 'SIGTERM');
    if (await within(Promise.all(group.map((e) => e.closed)), STOP_TIMEOUT_MS)) return;
    const stragglers = group.filter((e) => e.running);
    this.complain(`${names(stragglers)} did not stop within ${STOP_TIMEOUT_MS / 1000} s, killing`);
    for (const entry of stragglers) this.#signal(entry, 'SIGKILL');
    await within(Promise.all(stragglers.map((e) => e.closed)), KILL_WAIT_MS);
  }

  async #forceStop(exitCode) {
    this.complain('killing everything');
    for (const entry of this.#managed) this.#signal(entry, 'SIGKILL');
    await within(Promise.all(this.#managed.map((e) => e.closed)), KILL_WAIT_MS);
    process.exit(exitCode);
  }

  #onSignal(sig) {
    if (!this.#stopping) {
      this.#stopRequestedAt = Date.now();
      this.say(`${sig} received, stopping (press Ctrl-C again to kill everything at once)`);
      void this.shutdown(0);
    } else if (Date.now() - this.#stopRequestedAt > SIGNAL_ECHO_MS) {
      void this.#forceStop(130);
    }
  }
}
