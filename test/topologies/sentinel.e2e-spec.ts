import { RedisSentinelHarness } from '../support/redis-topologies';
import type { FakeOpenAIUpstream } from '../support/fake-openai-upstream';
import type { Stack } from '../support/stack';
import {
  describeCoreContract,
  describeFailover,
  startPoolUpstreams,
  startTopologyStack,
} from './topology-suite';

/** The gateway on a real Sentinel set: one master, one replica, three sentinels. */
describe('on a Sentinel set', () => {
  let sentinel: RedisSentinelHarness;
  let stack: Stack;
  let upstreams: FakeOpenAIUpstream[] = [];

  beforeAll(async () => {
    sentinel = await RedisSentinelHarness.start();
    upstreams = await startPoolUpstreams();
    stack = await startTopologyStack(sentinel, upstreams);
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await Promise.all(upstreams.map((upstream) => upstream.stop()));
    await sentinel?.stop();
  });

  describeCoreContract(
    'sentinel',
    () => stack,
    () => upstreams,
  );

  describeFailover(
    'sentinel',
    () => stack,
    () => ({
      killMaster: async () => {
        await sentinel.killMaster();
      },
      notReadyWhileDown: true,
      promoted: () => sentinel.waitForPromotion(20_000),
    }),
  );
});
