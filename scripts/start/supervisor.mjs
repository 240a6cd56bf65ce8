// The launcher's children: starting them, watching them, and stopping them in stages.
import { spawn } from 'node:child_process';
import { clearTimeout, setTimeout } from 'node:timers';
import { flushPending, pipeLines } from './output.mjs';

// The gateway and the workers drain open work for up to 30 s by default (GATEWAY_/WORKER_DRAIN_TIMEOUT_MS).
const STOP_TIMEOUT_MS = 45_000;
const KILL_WAIT_MS = 2_000;
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
 * Owns every process the launcher starts and the launcher's own ending: one place decides when to stop,
 * stops the children highest stage first, and exits.
 */
export class Supervisor {
  /** Every process we started, until the launcher exits. */
  #managed = [];
  #stopping = null;
  #stopRequestedAt = 0;

  constructor({ root, env, say, complain }) {
    this.root = root;
    this.env = env;
    this.say = say;
    this.complain = complain;
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
   * Ctrl-C then reaches only the launcher, which stops the apps in order instead of all at once.
   */
  start(proc, command, args, { piped = true, childEnv = this.env } = {}) {
    const child = spawn(command, args, {
      cwd: this.root,
      env: childEnv,
      stdio: piped ? ['ignore', 'pipe', 'pipe'] : 'inherit',
      detached: piped,
    });
    const entry = { ...proc, child, running: true, grouped: piped };
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

  /** An app or the private Redis ending before we asked it to leaves the system broken: stop the rest. */
  watchForUnexpectedExit(entry) {
    void entry.closed.then((result) => {
      if (this.#stopping) return;
      this.complain(`${entry.name} ${describeExit(result)}; stopping everything`);
      void this.shutdown(1);
    });
  }

  /** Stops everything, highest stage first, and exits with `exitCode`. Only the first call counts. */
  shutdown(exitCode) {
    this.#stopping ??= (async () => {
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
