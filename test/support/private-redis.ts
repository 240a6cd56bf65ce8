import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { freePort } from './free-port';
import { waitFor } from './wait-for';

/** A redis-server of the test's own on a free port, so the test may stop and restart it. */
export class PrivateRedis {
  private process: ChildProcess | null = null;

  private constructor(
    readonly port: number,
    /** With a password, the server requires it (`--requirepass`) and `url` carries it. */
    readonly password?: string,
  ) {}

  static async start(options: { password?: string } = {}): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort(), options.password);
    await redis.up();
    return redis;
  }

  get url(): string {
    const auth = this.password === undefined ? '' : `:${encodeURIComponent(this.password)}@`;
    return `redis://${auth}127.0.0.1:${this.port}`;
  }

  /** Starts the server unless it is already running. */
  async up(): Promise<void> {
    if (this.process && this.process.exitCode === null && this.process.signalCode === null) return;
    this.process = spawn(
      'redis-server',
      [
        ...['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        ...(this.password === undefined ? [] : ['--requirepass', this.password]),
      ],
      {
        stdio: 'ignore',
      },
    );
    await waitFor(`redis-server to accept connections on port ${this.port}`, () => this.accepts(), 15_000);
  }

  async down(): Promise<void> {
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  private accepts(): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = connect(this.port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
  }
}
