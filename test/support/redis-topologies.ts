import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { freePort } from './free-port';
import { waitFor } from './wait-for';

const run = promisify(execFile);

/** A Redis deployment a test starts and owns: the env that points the apps at it, and a client of its own. */
export interface TestRedis {
  readonly kind: 'cluster' | 'sentinel';
  /** REDIS_* variables for the apps. */
  readonly env: Record<string, string>;
  /** A fresh client for the test's own reads and writes (the caller closes it). */
  client(): Redis;
  /** Every data node that currently is a master, as a client of its own (the caller closes them). */
  masters(): Promise<Redis[]>;
  stop(): Promise<void>;
}

const BASE_OPTIONS = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'];

/** One redis-server process (a data node or a sentinel) of a harness. */
class ServerProcess {
  private child: ChildProcess | null = null;

  constructor(
    readonly port: number,
    private readonly args: string[],
  ) {}

  async up(): Promise<void> {
    if (this.running) return;
    this.child = spawn('redis-server', this.args, { stdio: 'ignore' });
    await waitFor(`redis-server on port ${this.port}`, () => accepts(this.port), 15_000);
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Kills it hard (a crash, as far as its peers can tell). */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A free port whose cluster bus port (port + 10000) is free as well. */
async function freeClusterPort(taken: Set<number>): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port + 10000 > 65535 || taken.has(port) || taken.has(port + 10000)) continue;
    if (await accepts(port + 10000)) continue;
    taken.add(port);
    taken.add(port + 10000);
    return port;
  }
}

async function closeAll(clients: readonly Redis[]): Promise<void> {
  await Promise.all(clients.map((client) => client.quit().catch(() => client.disconnect())));
}

/**
 * A real Redis Cluster from the `redis-server` binary: `masters` masters with one replica each, created by
 * `redis-cli --cluster create`, in a temporary directory removed at `stop()`.
 */
export class RedisClusterHarness implements TestRedis {
  readonly kind = 'cluster';

  private constructor(
    private readonly dir: string,
    readonly nodes: ServerProcess[],
  ) {}

  static async start(masters = 3): Promise<RedisClusterHarness> {
    const dir = await mkdtemp(join(tmpdir(), 'mgw-cluster-'));
    const taken = new Set<number>();
    const nodes: ServerProcess[] = [];
    for (let i = 0; i < masters * 2; i++) {
      const port = await freeClusterPort(taken);
      nodes.push(
        new ServerProcess(port, [
          ...['--port', String(port), ...BASE_OPTIONS, '--dir', dir],
          ...['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`],
          // Quick failure detection, so a failover test sees the promotion within seconds.
          ...['--cluster-node-timeout', '1500'],
          // Replicas sync at once rather than after the default 5 s batching delay.
          ...['--repl-diskless-sync-delay', '0'],
        ]),
      );
    }
    const harness = new RedisClusterHarness(dir, nodes);
    try {
      await Promise.all(nodes.map((node) => node.up()));
      await run('redis-cli', [
        '--cluster',
        'create',
        ...nodes.map((node) => `127.0.0.1:${node.port}`),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
      ]);
      await harness.waitUntilHealthy();
    } catch (error) {
      await harness.stop();
      throw error;
    }
    return harness;
  }

  get env(): Record<string, string> {
    return { REDIS_CLUSTER_NODES: this.nodes.map((node) => `127.0.0.1:${node.port}`).join(',') };
  }

  client(): Redis {
    const seeds = this.nodes
      .filter((node) => node.running)
      .map((node) => ({ host: '127.0.0.1', port: node.port }));
    // Typed as Redis like the apps' connections (see createRedisConnection).
    const client = new Cluster(seeds, { redisOptions: { maxRetriesPerRequest: 3 } });
    client.on('error', () => undefined);
    return client as unknown as Redis;
  }

  async masters(): Promise<Redis[]> {
    const clients: Redis[] = [];
    for (const node of this.nodes.filter((n) => n.running)) {
      const client = new Redis(node.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
      const role = (await client.role()) as [string];
      if (role[0] === 'master') clients.push(client);
      else client.disconnect();
    }
    return clients;
  }

  /** The node serving `key`'s slot as master now. */
  async masterOf(key: string): Promise<ServerProcess> {
    const probe = this.nodes.find((node) => node.running)!;
    const client = new Redis(probe.port, '127.0.0.1');
    try {
      const slot = (await client.call('CLUSTER', 'KEYSLOT', key)) as number;
      const ranges = (await client.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
      const owner = ranges.find(([from, to]) => slot >= from && slot <= to)![2][1];
      return this.nodes.find((node) => node.port === owner)!;
    } finally {
      client.disconnect();
    }
  }

  /** The running masters other than the one serving `key`'s slot. */
  async otherMasters(key: string): Promise<ServerProcess[]> {
    const owner = await this.masterOf(key);
    const clients = await this.masters();
    const ports = clients.map((client) => client.options.port);
    await closeAll(clients);
    return this.nodes.filter((node) => node.port !== owner.port && ports.includes(node.port));
  }

  /** Empties `node`'s script cache, as on a master that joined the cluster just now. */
  async flushScripts(node: { port: number }): Promise<void> {
    const client = new Redis(node.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
    try {
      await client.script('FLUSH');
    } finally {
      client.disconnect();
    }
  }

  /**
   * Moves `key`'s slot to the master `to` the way `redis-cli --cluster reshard` does, with traffic free to
   * flow: IMPORTING on the target, MIGRATING on the source, the slot's keys moved by MIGRATE in batches of
   * ten, then the slot assigned to the target on every master. `inMigration` runs while the slot is half
   * moved (MIGRATING/IMPORTING set, its keys still on the source), where clients meet ASK and TRYAGAIN.
   * Returns how many keys were moved.
   */
  async migrateSlot(key: string, to: ServerProcess, inMigration: () => Promise<void>): Promise<number> {
    const from = await this.masterOf(key);
    if (from.port === to.port) throw new Error(`the slot of ${key} is already on ${to.port}`);
    const clients = await this.masters();
    const byPort = new Map(clients.map((client) => [client.options.port!, client]));
    try {
      const [source, target] = [byPort.get(from.port)!, byPort.get(to.port)!];
      const slot = (await source.call('CLUSTER', 'KEYSLOT', key)) as number;
      const [sourceId, targetId] = await Promise.all(
        [source, target].map(async (client) => (await client.call('CLUSTER', 'MYID')) as string),
      );
      await target.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', sourceId!);
      await source.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', targetId!);
      await inMigration();
      let moved = 0;
      for (;;) {
        const keys = (await source.call('CLUSTER', 'GETKEYSINSLOT', slot, 10)) as string[];
        if (keys.length === 0) break;
        await source.call('MIGRATE', '127.0.0.1', to.port, '', 0, 5000, 'REPLACE', 'KEYS', ...keys);
        moved += keys.length;
      }
      // The target first, then the source (its blocked clients get MOVED), then every other master.
      const others = clients.filter((client) => client !== source && client !== target);
      for (const client of [target, source, ...others]) {
        await client.call('CLUSTER', 'SETSLOT', slot, 'NODE', targetId!);
      }
      return moved;
    } finally {
      await closeAll(clients);
    }
  }

  /**
   * Resolves once every running node sees every slot served, every slot's master is a running node (right
   * after a kill, the nodes still report `ok` until they flag the dead one), and every replica has synced
   * with its master: a replica that never synced refuses to fail over ("disconnected from master for
   * longer than allowed").
   */
  async waitUntilHealthy(timeoutMs = 30_000): Promise<void> {
    const running = () => new Set(this.nodes.filter((n) => n.running).map((n) => n.port));
    await waitFor(
      'the cluster to be healthy',
      async () => {
        for (const port of running()) {
          const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'info']);
          if (!stdout.includes('cluster_state:ok') || !stdout.includes('cluster_slots_ok:16384'))
            return false;
          const { stdout: replication } = await run('redis-cli', ['-p', String(port), 'info', 'replication']);
          if (replication.includes('role:slave') && !replication.includes('master_link_status:up'))
            return false;
          if (!(await this.slotsServedBy(port, running()))) return false;
        }
        return true;
      },
      timeoutMs,
    );
  }

  /** Whether, as the node on `port` sees it, every slot range's master is a running node. */
  private async slotsServedBy(port: number, running: Set<number>): Promise<boolean> {
    const client = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
    try {
      const ranges = (await client.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
      return ranges.every(([, , [, master]]) => running.has(master));
    } finally {
      client.disconnect();
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.kill()));
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** A master, one replica and three sentinels from the `redis-server` binary, in a temporary directory. */
export class RedisSentinelHarness implements TestRedis {
  readonly kind = 'sentinel';
  static readonly MASTER_NAME = 'mgwmaster';

  private constructor(
    private readonly dir: string,
    readonly data: ServerProcess[],
    readonly sentinels: ServerProcess[],
  ) {}

  static async start(): Promise<RedisSentinelHarness> {
    const dir = await mkdtemp(join(tmpdir(), 'mgw-sentinel-'));
    const [masterPort, replicaPort] = [await freePort(), await freePort()];
    // In the temporary directory: a replica's full sync writes an RDB file even without `save`.
    const data = [
      new ServerProcess(masterPort, ['--port', String(masterPort), ...BASE_OPTIONS, '--dir', dir]),
      new ServerProcess(replicaPort, [
        ...['--port', String(replicaPort), ...BASE_OPTIONS, '--dir', dir],
        ...['--replicaof', '127.0.0.1', String(masterPort)],
      ]),
    ];
    const sentinels: ServerProcess[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const file = join(dir, `sentinel-${port}.conf`);
      // Sentinel rewrites its config file as it learns the set, so each has a writable one.
      await writeFile(
        file,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${RedisSentinelHarness.MASTER_NAME} 127.0.0.1 ${masterPort} 2`,
          `sentinel down-after-milliseconds ${RedisSentinelHarness.MASTER_NAME} 1000`,
          `sentinel failover-timeout ${RedisSentinelHarness.MASTER_NAME} 5000`,
          `sentinel parallel-syncs ${RedisSentinelHarness.MASTER_NAME} 1`,
          '',
        ].join('\n'),
      );
      sentinels.push(new ServerProcess(port, [file, '--sentinel']));
    }
    const harness = new RedisSentinelHarness(dir, data, sentinels);
    try {
      await Promise.all([...data, ...sentinels].map((node) => node.up()));
      await harness.waitUntilReplicated();
    } catch (error) {
      await harness.stop();
      throw error;
    }
    return harness;
  }

  get env(): Record<string, string> {
    return {
      REDIS_SENTINELS: this.sentinels.map((s) => `127.0.0.1:${s.port}`).join(','),
      REDIS_SENTINEL_MASTER: RedisSentinelHarness.MASTER_NAME,
    };
  }

  client(): Redis {
    const client = new Redis({
      sentinels: this.sentinels.map((s) => ({ host: '127.0.0.1', port: s.port })),
      name: RedisSentinelHarness.MASTER_NAME,
      maxRetriesPerRequest: 3,
    });
    // Reconnects during a failover are expected; the commands that fail say so themselves.
    client.on('error', () => undefined);
    return client;
  }

  async masters(): Promise<Redis[]> {
    return [new Redis(await this.masterPort(), '127.0.0.1', { maxRetriesPerRequest: 1 })];
  }

  /** The port of the master the sentinels name now. */
  async masterPort(): Promise<number> {
    const sentinel = new Redis(this.sentinels.find((s) => s.running)!.port, '127.0.0.1');
    try {
      const [, port] = (await sentinel.call(
        'SENTINEL',
        'GET-MASTER-ADDR-BY-NAME',
        RedisSentinelHarness.MASTER_NAME,
      )) as [string, string];
      return Number(port);
    } finally {
      sentinel.disconnect();
    }
  }

  /** The replica is in sync and every sentinel knows both data nodes and its two peers. */
  async waitUntilReplicated(timeoutMs = 30_000): Promise<void> {
    await waitFor(
      'the Sentinel set to be in sync',
      async () => {
        const masterPort = await this.masterPort();
        const master = new Redis(masterPort, '127.0.0.1', { lazyConnect: true });
        try {
          await master.connect();
          const info = await master.info('replication');
          if (!/connected_slaves:1/.test(info) || !/state=online/.test(info)) return false;
        } finally {
          master.disconnect();
        }
        for (const sentinel of this.sentinels.filter((s) => s.running)) {
          const client = new Redis(sentinel.port, '127.0.0.1', { lazyConnect: true });
          try {
            await client.connect();
            const known = (await client.call(
              'SENTINEL',
              'SENTINELS',
              RedisSentinelHarness.MASTER_NAME,
            )) as unknown[];
            if (known.length < this.sentinels.filter((s) => s.running).length - 1) return false;
          } finally {
            client.disconnect();
          }
        }
        return true;
      },
      timeoutMs,
    );
  }

  /**
   * Resolves once the sentinels name a running node that reports itself master: right after a kill they
   * still name the dead master for seconds (until it is flagged down and the failover is done), and they
   * switch to the replica's address before it has left the replica role.
   */
  async waitForPromotion(timeoutMs = 20_000): Promise<void> {
    await waitFor(
      'the sentinels to name a running master',
      async () => {
        const port = await this.masterPort();
        if (!this.data.some((node) => node.port === port && node.running)) return false;
        const master = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1 });
        try {
          await master.connect();
          const [role] = (await master.role()) as [string];
          return role === 'master';
        } finally {
          master.disconnect();
        }
      },
      timeoutMs,
    );
  }

  /** Kills the current master; the sentinels promote the replica. Returns the killed node. */
  async killMaster(): Promise<ServerProcess> {
    const port = await this.masterPort();
    const node = this.data.find((n) => n.port === port)!;
    await node.kill();
    return node;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.sentinels, ...this.data].map((node) => node.kill()));
    await rm(this.dir, { recursive: true, force: true });
  }
}

export { closeAll as closeRedisClients };
