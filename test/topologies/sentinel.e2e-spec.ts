import { RedisSentinelHarness } from '../support/redis-topologies';
import type { Stack } from '../support/stack';
import { describeCoreContract, startTopologyStack } from './topology-suite';

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
});
