import { Stack } from '../support/stack';
import { waitFor } from '../support/wait-for';

const MODEL = 'sim-fail';
const FAILURES = 100;
const BODY_BYTES = 1024 * 1024;

/**
 * Failed jobs are kept for inspection, but not their requests: a hundred large requests that fail leave
 * a hundred small records in Redis, not a hundred bodies (a memory-capped Redis would fill up and refuse
 * every later admission).
 */
describe('faults: failed jobs do not keep their requests in Redis', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: {
        models: [
          {
            id: MODEL,
            type: 'chat',
            owned_by: 'faults',
            backend: { kind: 'simulator', mode: 'words', tokensPerSecond: 0, failAfterTokens: 1 },
          },
        ],
      },
      without: ['image-worker'],
      waitForModels: [MODEL],
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  /** Bytes Redis uses for every key of the stack's namespace. */
  async function namespaceBytes(): Promise<number> {
    let total = 0;
    let cursor = '0';
    do {
      const [next, keys] = await stack.redis.scan(cursor, 'MATCH', `${stack.namespace}:*`, 'COUNT', 1000);
      for (const key of keys) {
        total += (await stack.redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) as number;
      }
      cursor = next;
    } while (cursor !== '0');
    return total;
  }

  it(`grows Redis by less than 10 MB for ${FAILURES} failing 1 MB requests`, async () => {
    const before = await namespaceBytes();
    const words = 'the quick brown fox jumps over the lazy dog ';
    const content = words.repeat(Math.ceil(BODY_BYTES / words.length)).slice(0, BODY_BYTES);
    const body = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content }] });

    const statuses: number[] = [];
    const senders = Array.from({ length: 8 }, async (_, lane) => {
      for (let i = lane; i < FAILURES; i += 8) {
        const res = await stack.post('/v1/chat/completions', body);
        await res.arrayBuffer();
        statuses.push(res.status);
      }
    });
    await Promise.all(senders);
    expect(statuses).toHaveLength(FAILURES);
    expect(new Set(statuses)).toEqual(new Set([502]));

    const failedSet = `${stack.namespace}:chat.${MODEL}:failed`;
    await waitFor('every job failed', async () => (await stack.redis.zcard(failedSet)) === FAILURES, 10_000);
    // The kept jobs still say which request failed, how large it was and why.
    const ids = await stack.redis.zrange(failedSet, 0, '-1');
    await waitFor(
      'every failed job stripped',
      async () => {
        const sizes = await Promise.all(
          ids.map((id) => stack.redis.hstrlen(`${stack.namespace}:chat.${MODEL}:${id}`, 'data')),
        );
        return sizes.every((size) => size < 1024);
      },
      10_000,
    );
    const kept = await stack.redis.hgetall(`${stack.namespace}:chat.${MODEL}:${ids[0]}`);
    expect(JSON.parse(kept.data!)).toEqual({
      summary: true,
      requestId: ids[0],
      model: MODEL,
      dataBytes: expect.any(Number) as number,
    });
    expect((JSON.parse(kept.data!) as { dataBytes: number }).dataBytes).toBeGreaterThan(BODY_BYTES);
    expect(kept.failedReason).toContain('simulated backend failure');

    const grown = (await namespaceBytes()) - before;
    expect(grown).toBeLessThan(10 * 1024 * 1024);
  }, 180_000);
});
