import { keyLayoutOf, queueNameFor } from '@mgw/contracts';
import { RedisClusterHarness } from '../support/redis-topologies';
import type { Stack } from '../support/stack';
import {
  describeCoreContract,
  describeFailover,
  startTopologyStack,
  TOPOLOGY_CATALOG,
} from './topology-suite';

/** The gateway on a real 3-master / 3-replica Redis Cluster (test/support/redis-topologies.ts). */
describe('on a Redis Cluster', () => {
  let cluster: RedisClusterHarness;
  let stack: Stack;

  beforeAll(async () => {
    cluster = await RedisClusterHarness.start();
    stack = await startTopologyStack(cluster);
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await cluster?.stop();
  });

  describeCoreContract('cluster', () => stack);

  it("keeps each model's queue in one slot and spreads the models over the masters", async () => {
    const masters = new Set<number>();
    for (const model of TOPOLOGY_CATALOG.models) {
      const kind = model.type === 'image' ? 'image' : 'chat';
      const queue = `${stack.namespace}:${queueNameFor(kind, model.id, keyLayoutOf(stack.redis))}`;
      const [wait, admitting] = [
        `${queue}:wait`,
        `${stack.namespace}:admission:${queue.split(':')[1]}:pending`,
      ];
      const owner = await cluster.masterOf(wait);
      expect((await cluster.masterOf(admitting)).port).toBe(owner.port);
      masters.add(owner.port);
    }
    expect(masters.size).toBeGreaterThanOrEqual(2);
  });

  describeFailover(
    'cluster',
    () => stack,
    () => ({
      killMaster: async () => {
        const queue = `${stack.namespace}:${queueNameFor('chat', 'slow-chat', keyLayoutOf(stack.redis))}:active`;
        await (await cluster.masterOf(queue)).kill();
      },
      promoted: () => cluster.waitUntilHealthy(20_000),
      notReadyWhileDown: false,
    }),
  );
});
