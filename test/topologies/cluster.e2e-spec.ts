import { accessNames } from '@mgw/access';
import {
  keyLayoutOf,
  queueNameFor,
  replyChannelFor,
  replyLivenessKeyFor,
  type ModelKind,
} from '@mgw/contracts';
import { closeRedisClients, RedisClusterHarness } from '../support/redis-topologies';
import type { FakeOpenAIUpstream } from '../support/fake-openai-upstream';
import type { Stack } from '../support/stack';
import { readSse, type SseEvent } from '../support/sse';
import { waitFor } from '../support/wait-for';
import {
  ADMIN_TOKEN,
  describeCoreContract,
  describeFailover,
  REDIS_ROUTING_ERRORS,
  startPoolUpstreams,
  startTopologyStack,
  TOPOLOGY_CATALOG,
  textOf,
} from './topology-suite';

interface Answer {
  status: number;
  stream: boolean;
  body: string;
}

/** The stack's one gateway's reply channel, found by its liveness key (`replyLivenessKeyFor`). */
async function replyChannelOf(cluster: RedisClusterHarness, namespace: string): Promise<string> {
  const suffix = replyLivenessKeyFor('');
  const masters = await cluster.masters();
  try {
    const found: string[] = [];
    for (const master of masters) {
      found.push(...(await master.keys(replyChannelFor(namespace, '*') + suffix)));
    }
    expect(found).toHaveLength(1);
    return found[0]!.slice(0, -suffix.length);
  } finally {
    await closeRedisClients(masters);
  }
}

/** The gateway on a real 3-master / 3-replica Redis Cluster (test/support/redis-topologies.ts). */
describe('on a Redis Cluster', () => {
  let cluster: RedisClusterHarness;
  let stack: Stack;
  let upstreams: FakeOpenAIUpstream[] = [];

  beforeAll(async () => {
    cluster = await RedisClusterHarness.start();
    upstreams = await startPoolUpstreams();
    stack = await startTopologyStack(cluster, upstreams);
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await Promise.all(upstreams.map((upstream) => upstream.stop()));
    await cluster?.stop();
  });

  describeCoreContract(
    'cluster',
    () => stack,
    () => upstreams,
  );

  it("keeps each model's queue in one slot and spreads the models over the masters", async () => {
    const masters = new Set<number>();
    for (const model of TOPOLOGY_CATALOG.models) {
      const kind = model.type as ModelKind;
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

  it("serves every request, with exact limits, while a busy model's queue slot and a key's limit slot move", async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const created = await fetch(`${stack.baseUrl}/admin/keys`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ name: 'reshard', max_concurrent: 6, rpm: 10_000 }),
    });
    const { id: keyId, key } = (await created.json()) as { id: string; key: string };
    const chat = (model: string, stream: boolean, content = 'tell a story'): Promise<Response> =>
      fetch(`${stack.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, stream, messages: [{ role: 'user', content }] }),
      });

    // Three lanes, each one request at a time (streams and answers in turn) until both slots have moved:
    // never more than six of the key's slots in use, even with each lane's last one still being released.
    const answers: Answer[] = [];
    let moving = true;
    const lanes = Array.from({ length: 3 }, async (_, lane) => {
      for (let i = lane; moving || i < lane + 4; i++) {
        const stream = i % 2 === 0;
        // A failed fetch is an answer too (status 0), so it shows in the assertions below.
        const answer = await chat('sim-words', stream).then(
          async (res) => ({ status: res.status, stream, body: await res.text() }),
          (error: Error) => ({ status: 0, stream, body: error.message }),
        );
        answers.push(answer);
      }
    });
    await waitFor('the load to flow', () => answers.length >= 3);

    const layout = keyLayoutOf(stack.redis);
    const names = accessNames(stack.namespace, layout);
    const queue = `${stack.namespace}:${queueNameFor('chat', 'sim-words', layout)}:wait`;
    const limits = names.rpm(keyId);
    const halfMoved = () => new Promise<void>((resolve) => setTimeout(resolve, 300));
    // Each slot lands on a master whose script cache is empty: every script meets NOSCRIPT there first.
    const queueTarget = (await cluster.otherMasters(queue))[0]!;
    await cluster.flushScripts(queueTarget);
    const movedKeys = await cluster.migrateSlot(queue, queueTarget, halfMoved);
    const limitsTarget = (await cluster.otherMasters(limits))[0]!;
    await cluster.flushScripts(limitsTarget);
    await cluster.migrateSlot(limits, limitsTarget, halfMoved);
    moving = false;
    await Promise.all(lanes);

    expect(movedKeys).toBeGreaterThan(0);
    expect((await cluster.masterOf(queue)).port).toBe(queueTarget.port);
    expect((await cluster.masterOf(limits)).port).toBe(limitsTarget.port);
    const wrong = answers.filter(
      (a) =>
        a.status !== 200 ||
        REDIS_ROUTING_ERRORS.test(a.body) ||
        (a.stream && !a.body.trimEnd().endsWith('data: [DONE]')),
    );
    // On a surprise, the apps' errors say why.
    const errors =
      wrong.length === 0 ? [] : [...stack.processes.keys()].map((l) => stack.logs(l).slice(-4000));
    expect({ wrong, errors }).toEqual({ wrong: [], errors: [] });
    expect(answers.filter((a) => a.stream).length).toBeGreaterThan(0);
    expect(answers.filter((a) => !a.stream).length).toBeGreaterThan(0);

    // Limits stay exact: each admitted request is in the rpm window once, every slot came back, usage
    // counts each request once, and the key still admits exactly max_concurrent at a time.
    expect(await stack.redis.zcard(limits)).toBe(answers.length);
    const concurrency = names.concurrency(keyId);
    await waitFor('every slot of the key back', async () => (await stack.redis.zcard(concurrency)) === 0);
    const counted = await waitFor('the usage of the moved key', async () => {
      const res = await fetch(`${stack.baseUrl}/admin/usage?key=${keyId}`, { headers: admin });
      const { requests } = ((await res.json()) as { totals: { requests: number } }).totals;
      return requests >= answers.length ? requests : undefined;
    });
    expect(counted).toBe(answers.length);
    const active = `${stack.namespace}:${queueNameFor('chat', 'sim-words', layout)}:active`;
    await waitFor('no job left active', async () => (await stack.redis.llen(active)) === 0);
    // Each holds its slot for about a second (ten words at ten a second), so all seven overlap.
    const words = 'one two three four five six seven eight nine ten';
    const burst = await Promise.all(Array.from({ length: 7 }, () => chat('slow-chat', true, words)));
    await Promise.all(burst.map((res) => res.text()));
    expect(burst.map((res) => res.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 429]);

    for (const label of stack.processes.keys()) expect(stack.logs(label)).not.toMatch(REDIS_ROUTING_ERRORS);
  }, 60_000);

  it("keeps every open stream whole while a reshard moves the gateway's reply channel", async () => {
    const STREAMS = 7;
    const created = await fetch(`${stack.baseUrl}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'reply-reshard' }),
    });
    const { key } = (await created.json()) as { key: string };
    // Thirty words at ten a second: every answer is still being written when the slot moves.
    const words = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');
    const chat = (stream: boolean): Promise<Response> =>
      fetch(`${stack.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'slow-chat', stream, messages: [{ role: 'user', content: words }] }),
      });
    const channel = await replyChannelOf(cluster, stack.namespace);

    // The answer first, so its job runs while the slot moves (the chat worker runs eight at a time).
    const active = `${stack.namespace}:${queueNameFor('chat', 'slow-chat', keyLayoutOf(stack.redis))}:active`;
    await waitFor('no job left from before', async () => (await stack.redis.llen(active)) === 0);
    const answer = chat(false).then(async (res) => ({ status: res.status, body: await res.text() }));
    await waitFor('the answer under way', async () => (await stack.redis.llen(active)) === 1);
    const streams = await Promise.all(Array.from({ length: STREAMS }, () => chat(true)));
    expect(streams.map((res) => res.status)).toEqual(Array<number>(STREAMS).fill(200));
    const received: SseEvent[][] = streams.map(() => []);
    const ended = streams.map(async (res, i) => {
      for await (const event of readSse(res.body!)) received[i]!.push(event);
    });
    await waitFor('every stream under way', () => received.every((events) => events.length >= 3));

    const target = (await cluster.otherMasters(channel))[0]!;
    await cluster.migrateSlot(channel, target, () => new Promise((resolve) => setTimeout(resolve, 100)));
    expect((await cluster.masterOf(channel)).port).toBe(target.port);
    // Every stream and the answer are still being written: the rest of each goes over the new master.
    expect(received.map((events) => events.at(-1)?.data === '[DONE]')).toEqual(
      Array<boolean>(STREAMS).fill(false),
    );
    expect(await stack.redis.llen(active)).toBe(STREAMS + 1);
    await Promise.all(ended);

    // Each stream whole: every word once and in order, its finish_reason, [DONE], and no error event.
    const outcomes = received.map((events) => ({
      text: textOf(events),
      finish: events.some((e) => e.data.includes('"finish_reason":"stop"')),
      errors: events.filter((e) => e.data.includes('"error"')).map((e) => e.data),
      last: events.at(-1)?.data,
    }));
    const whole = { text: words, finish: true, errors: [], last: '[DONE]' };
    // On a surprise, the gateway's and the worker's last lines say why.
    const logs = outcomes.every((o) => o.text === words && o.errors.length === 0)
      ? ''
      : `${stack.logs('gateway').slice(-3000)}\n${stack.logs('chat-worker').slice(-3000)}`;
    expect({ outcomes, logs }).toEqual({ outcomes: Array<typeof whole>(STREAMS).fill(whole), logs: '' });
    const { status, body } = await answer;
    expect(status).toBe(200);
    expect(
      (JSON.parse(body) as { choices: { message: { content: string } }[] }).choices[0]!.message.content,
    ).toBe(words);
  }, 60_000);

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
