import { Socket } from 'node:net';

/**
 * The unit project's guard: a unit spec runs without Redis, so any TCP connection to a Redis port fails at
 * once with a message that says where such a spec belongs (`*.integration.spec.ts`).
 */
const REDIS_PORTS = new Set([6379, 6380]);
const original = Socket.prototype.connect;

function portOf(args: unknown[]): number | null {
  // `net.connect` hands over its normalised arguments as one array; `socket.connect` takes them spread.
  const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
  if (typeof first === 'number' || typeof first === 'string') return Number(first);
  if (first && typeof first === 'object' && 'port' in first) return Number(first.port);
  return null;
}

Socket.prototype.connect = function connect(this: Socket, ...args: unknown[]): Socket {
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
  return (original as (...a: unknown[]) => Socket).apply(this, args);
};
