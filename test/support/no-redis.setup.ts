import { Socket } from 'node:net';

/**
 * The unit project's guard: a unit spec runs without Redis, so any TCP connection to a Redis port fails at
 * once with a message that says where such a spec belongs (`*.integration.spec.ts`).
 *
 * `node:net` is not sandboxed per test file: jest reuses a worker process for specs of every project, so
 * the guard is installed for each unit file and taken down after it — an e2e spec that runs next on the
 * same worker must reach Redis. The unpatched method is kept on a global symbol so that a file which never
 * reached its `afterAll` cannot make the guard its own "original".
 */
const REDIS_PORTS = new Set([6379, 6380]);
const ORIGINAL = Symbol.for('mgw.test.socket-connect');
type Connect = (this: Socket, ...args: unknown[]) => Socket;
const registry = globalThis as unknown as Record<symbol, Connect | undefined>;
const original: Connect = (registry[ORIGINAL] ??= Socket.prototype.connect as Connect);

function portOf(args: unknown[]): number | null {
  // `net.connect` hands over its normalised arguments as one array; `socket.connect` takes them spread.
  const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
  if (typeof first === 'number' || typeof first === 'string') return Number(first);
  if (first && typeof first === 'object' && 'port' in first) return Number(first.port);
  return null;
}

function guardedConnect(this: Socket, ...args: unknown[]): Socket {
  const port = portOf(args);
  if (port !== null && REDIS_PORTS.has(port)) {
    process.nextTick(() =>
      this.destroy(
        new Error(
          `unit specs run without Redis (port ${port}); a spec that needs Redis is an integration spec: ` +
            'name it *.integration.spec.ts',
        ),
      ),
    );
    return this;
  }
  return original.apply(this, args);
}

beforeAll(() => {
  Socket.prototype.connect = guardedConnect;
});

afterAll(() => {
  Socket.prototype.connect = original;
});
