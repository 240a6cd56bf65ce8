// Child processes of a benchmark run: spawning with captured output, stopping by pid, and what the kernel
// says about them (/proc/<pid>/stat for CPU, /proc/<pid>/status for RSS).
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { clearTimeout, setTimeout } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';

/** Kernel clock ticks per second (USER_HZ); 100 on every Linux this runs on. */
const TICKS_PER_SECOND = 100;
const STOP_TIMEOUT_MS = 10_000;

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** A child process whose output is kept (the last 200 KB) for the error message if it dies. */
export class Child {
  constructor(label, command, args, options = {}) {
    this.label = label;
    this.output = '';
    this.process = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], ...options });
    this.exited = new Promise((resolve) =>
      this.process.once('exit', (code, signal) => {
        this.exitStatus = code ?? signal;
        resolve(this.exitStatus);
      }),
    );
    const keep = (chunk) => {
      this.output = (this.output + chunk.toString()).slice(-200_000);
    };
    this.process.stdout.on('data', keep);
    this.process.stderr.on('data', keep);
  }

  get pid() {
    return this.process.pid;
  }

  get running() {
    return this.process.exitCode === null && this.process.signalCode === null;
  }

  async stop(signal = 'SIGTERM') {
    if (!this.running) return;
    this.stopping = true;
    this.process.kill(signal);
    const timer = setTimeout(() => this.process.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await this.exited;
    clearTimeout(timer);
  }
}

/** CPU seconds (user + system) a process has used so far; null once it is gone. */
export function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may contain spaces; the fields after it are fixed.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND; // utime, stime (fields 14, 15)
  } catch {
    return null;
  }
}

/** Resident set size in bytes; null once the process is gone. */
export function rssBytes(pid) {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** A private redis-server on a free port: nothing else's keys, clients or load share it. */
export async function startRedis() {
  const port = await freePort();
  const child = new Child('redis', 'redis-server', [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--maxclients',
    '20000',
  ]);
  const deadline = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (!child.running) throw new Error(`redis-server exited:\n${child.output}`);
    if (Date.now() > deadline) throw new Error(`redis-server did not start on port ${port}`);
    await sleep(50);
  }
  child.url = `redis://127.0.0.1:${port}`;
  return child;
}

/**
 * A Redis Cluster of `masters` masters (no replicas: the bench measures the masters' work) from
 * redis-server and `redis-cli --cluster create`; the nodes are children `redis-1`…, `seeds` their addresses.
 */
export async function startRedisCluster(masters = 3, dir = tmpdir()) {
  const nodes = [];
  while (nodes.length < masters) {
    const port = await freePort();
    if (port + 10000 > 65535 || (await accepts(port + 10000))) continue;
    const child = new Child(`redis-${nodes.length + 1}`, 'redis-server', [
      ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      ...['--maxclients', '20000', '--cluster-enabled', 'yes', '--dir', dir],
      ...['--cluster-config-file', `bench-nodes-${port}.conf`],
    ]);
    child.port = port;
    nodes.push(child);
  }
  for (const node of nodes) {
    const deadline = Date.now() + 10_000;
    while (!(await accepts(node.port))) {
      if (!node.running || Date.now() > deadline)
        throw new Error(`redis-server did not start:\n${node.output}`);
      await sleep(50);
    }
  }
  const addresses = nodes.map((node) => `127.0.0.1:${node.port}`);
  execFileSync('redis-cli', [
    '--cluster',
    'create',
    ...addresses,
    '--cluster-replicas',
    '0',
    '--cluster-yes',
  ]);
  const deadline = Date.now() + 20_000;
  for (const node of nodes) {
    while (
      !execFileSync('redis-cli', ['-p', String(node.port), 'cluster', 'info'], { encoding: 'utf8' }).includes(
        'cluster_state:ok',
      )
    ) {
      if (Date.now() > deadline) throw new Error('the bench cluster did not become healthy');
      await sleep(100);
    }
    node.url = `redis://127.0.0.1:${node.port}`;
  }
  return { nodes, seeds: addresses.join(',') };
}

function accepts(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
