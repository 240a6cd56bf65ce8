import { RedisSentinelHarness } from '../support/redis-topologies';
import type { Stack } from '../support/stack';
import { waitFor } from '../support/wait-for';
import { describeCoreContract, describeFailover, startTopologyStack } from './topology-suite';

/** The gateway on a real Sentinel set: one master, one replica, three sentinels. */
describe('on a Sentinel set', () => {
  let sentinel: RedisSentinelHarness;
  let stack: Stack;

  beforeAll(async () => {
    sentinel = await RedisSentinelHarness.start();
    stack = await startTopologyStack(sentinel);
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await sentinel?.stop();
  });

  describeCoreContract('sentinel', () => stack);

  describeFailover(
    'sentinel',
    () => stack,
    () => ({
      killMaster: async () => {
        await sentinel.killMaster();
      },
      notReadyWhileDown: true,
      promoted: async () => {
        const dead = sentinel.data.find((node) => !node.running)!.port;
        await waitFor(
          'the sentinels to promote the replica',
          async () => (await sentinel.masterPort()) !== dead,
          20_000,
        );
      },
    }),
  );
});
