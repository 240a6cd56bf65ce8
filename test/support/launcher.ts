import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { resolve } from 'node:path';
import { waitFor } from './wait-for';

const ROOT = resolve(__dirname, '../..');

/**
 * `npm start` as a user runs it: the real scripts/start.mjs as a process, its tagged output collected, and
 * the pids it reports, so a test can kill an app or the launcher itself.
 */
export class Launcher {
  output = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(readonly process: ChildProcess) {
    process.stdout!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    process.stderr!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.exited = new Promise((done) => process.once('exit', (code, signal) => done({ code, signal })));
  }

  static start(env: Record<string, string>): Launcher {
    return new Launcher(
      spawn(process.execPath, ['scripts/start.mjs'], {
        cwd: ROOT,
        // METRICS_PORT=0: fixed metrics ports would collide with parallel runs.
        env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', METRICS_PORT: '0', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
  }

  /**
   * `npm start` in a terminal: util-linux `script` gives the launcher a pseudo-terminal as its stdout (and
   * copies what it writes there to ours). Signals go to `script`, which hands them on to the launcher.
   */
  static startOnTerminal(env: Record<string, string>): Launcher {
    return new Launcher(
      spawn(
        'script',
        [
          '--quiet',
          '--flush',
          '--return',
          '--command',
          `"${process.execPath}" scripts/start.mjs`,
          '/dev/null',
        ],
        {
          cwd: ROOT,
          env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', METRICS_PORT: '0', TERM: 'dumb', ...env },
          stdio: ['pipe', 'pipe', 'pipe'],
        },
      ),
    );
  }

  get running(): boolean {
    return this.process.exitCode === null && this.process.signalCode === null;
  }

  /** Waits for a line of the launcher's output to match `pattern`; fails early if the launcher exits. */
  async line(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> {
    return waitFor(
      `output matching ${String(pattern)}`,
      () => {
        const match = this.output.match(pattern);
        if (match) return match;
        if (!this.running) throw new Error('npm start exited');
        return null;
      },
      timeoutMs,
      () => `\n--- output ---\n${this.output}`,
    );
  }

  /** The pid of the latest `app` the launcher started (its "started …" or "restarted …" line). */
  pidOf(app: string): number {
    const pids = [...this.output.matchAll(new RegExp(`(?:re)?started ${app} \\(pid (\\d+)\\)`, 'g'))];
    if (pids.length === 0) throw new Error(`no pid of ${app} in the output:\n${this.output}`);
    return Number(pids.at(-1)![1]);
  }

  /** Every live process below the launcher (its apps, the private Redis and its tether). */
  descendants(): number[] {
    const children = new Map<number, number[]>();
    for (const dir of readProcDirs()) {
      const ppid = parentOf(dir);
      if (ppid !== null) children.set(ppid, [...(children.get(ppid) ?? []), dir]);
    }
    const found: number[] = [];
    const queue = [this.process.pid!];
    while (queue.length > 0) {
      for (const child of children.get(queue.shift()!) ?? []) {
        found.push(child);
        queue.push(child);
      }
    }
    return found;
  }

  kill(signal: NodeJS.Signals): void {
    if (this.running) this.process.kill(signal);
  }

  /** Stops the stack as Ctrl-C does; whatever still runs below it after `graceMs` is killed. */
  async stop(graceMs = 15_000): Promise<void> {
    const pids = this.descendants();
    this.kill('SIGINT');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.exited, new Promise((done) => (timer = setTimeout(done, graceMs)))]);
    clearTimeout(timer);
    for (const pid of pids) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  }
}

function readProcDirs(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
}

/** Fields of /proc/<pid>/stat after the command name: state, ppid, … (null once the process is gone). */
function statOf(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

function parentOf(pid: number): number | null {
  const fields = statOf(pid);
  return fields ? Number(fields[1]) : null;
}

/** True while `pid` runs; a zombie (exited, not yet reaped) holds no ports and counts as gone. */
export function isAlive(pid: number): boolean {
  const fields = statOf(pid);
  return fields !== null && fields[0] !== 'Z';
}

/** Resolves to the error code of a TCP connection attempt, or 'connected'. */
export function probePort(port: number): Promise<string> {
  return new Promise((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      done('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => done(error.code ?? 'error'));
  });
}
