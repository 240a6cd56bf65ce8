import { pacedStreamGaps } from '../support/paced-stream';
import { cpuSeconds } from '../support/process-stats';
import { Stack } from '../support/stack';

const CATALOG = {
  models: [
    // 20 tokens per second for 15 s: the paced stream the costly bodies must not stall.
    {
      id: 'sim-chat-long',
      type: 'chat',
      owned_by: 'faults',
      backend: { kind: 'simulator', mode: 'words', tokensPerSecond: 20, maxWords: 300 },
    },
    { id: 'sim-chat', type: 'chat', owned_by: 'faults', backend: { kind: 'simulator', mode: 'echo' } },
    { id: 'sim-image', type: 'image', owned_by: 'faults', backend: { kind: 'simulator' } },
    { id: 'sim-embed', type: 'embedding', owned_by: 'faults', dimensions: 8, backend: { kind: 'simulator' } },
  ],
};

/** The default body limit (BODY_LIMIT_BYTES). */
const DEFAULT_BODY_LIMIT = 10 * 1024 * 1024;

/** `count` copies of `element` as a JSON array, built as text (no 200,000-object array in this process). */
const jsonArray = (element: string, count: number) =>
  `[${Array.from({ length: count }, () => element).join(',')}]`;
/** A value nested `depth` arrays deep. */
const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

interface Case {
  route: string;
  what: string;
  body: string;
  /** The statuses a clear answer may have: a refusal, or (for a valid body) the answer itself. */
  statuses: number[];
}

const overLimit = (route: string, prefix: string): Case => ({
  route,
  what: 'a body over the limit',
  body: `${prefix}"pad":"${'x'.repeat(DEFAULT_BODY_LIMIT)}"}`,
  statuses: [413],
});
const deepCase = (route: string, prefix: string): Case => ({
  route,
  what: 'JSON nested 10,000 deep',
  body: `${prefix}"x":${deep(10_000)}}`,
  statuses: [400],
});
const messages = (content: string, count: number, maxTokens = '"max_tokens":4,') =>
  `{"model":"sim-chat",${maxTokens}"messages":${jsonArray(`{"role":"user","content":${content}}`, count)}}`;
const anthropicBlocks = (count: number) => jsonArray('{"type":"text","text":"a"}', count);
const responsesInput = (input: string) =>
  `{"model":"sim-chat","max_output_tokens":16,"store":false,"input":${input}}`;
const MESSAGES_PREFIX = '{"model":"sim-chat","max_tokens":4,"messages":[{"role":"user","content":"hi"}],';

/**
 * Costly bodies on every route but chat completions (whose own spec is validation-cost.e2e-spec.ts): a
 * huge valid body, 200,000 tiny elements, 200,000 parts in one message, JSON nested 10,000 deep, a body
 * over the limit.
 */
function costlyCases(storedId: string): Case[] {
  return [
    {
      route: '/v1/responses',
      what: 'a huge valid body (3,000 messages of 80 parts, 8 MB)',
      body: responsesInput(
        jsonArray(`{"role":"user","content":${jsonArray('{"type":"input_text","text":"a"}', 80)}}`, 3000),
      ),
      statuses: [200, 400],
    },
    {
      route: '/v1/responses',
      what: '200,000 empty items',
      body: responsesInput(jsonArray('{}', 200_000)),
      statuses: [400],
    },
    {
      route: '/v1/chat/completions',
      what: 'metadata of 200,000 pairs',
      body: `{"model":"sim-chat","messages":[{"role":"user","content":"hi"}],"metadata":{${Array.from({ length: 200_000 }, (_, i) => `"k${i}":"v"`).join(',')}}}`,
      statuses: [400],
    },
    {
      route: '/v1/chat/completions',
      what: 'logit_bias of 200,000 entries',
      body: `{"model":"sim-chat","messages":[{"role":"user","content":"hi"}],"logit_bias":{${Array.from({ length: 200_000 }, (_, i) => `"${i}":1`).join(',')}}}`,
      statuses: [400],
    },
    {
      route: '/v1/responses',
      what: '200,000 parts in one message',
      body: responsesInput(
        `[{"role":"user","content":${jsonArray('{"type":"input_text","text":""}', 200_000)}}]`,
      ),
      // The Responses API bounds no message's part count of its own (chat's CHAT_MAX_CONTENT_PARTS does not
      // apply): served, within the same bounds of time and CPU.
      statuses: [200, 400],
    },
    deepCase('/v1/responses', '{"model":"sim-chat","input":"hi",'),
    overLimit('/v1/responses', '{"model":"sim-chat","input":"hi",'),
    {
      route: '/v1/messages',
      what: 'a huge valid body (3,000 messages of 80 blocks, 6 MB)',
      body: messages(anthropicBlocks(80), 3000),
      statuses: [200, 400],
    },
    {
      route: '/v1/messages',
      what: '200,000 empty messages',
      body: `{"model":"sim-chat","max_tokens":4,"messages":${jsonArray('{}', 200_000)}}`,
      statuses: [400],
    },
    {
      route: '/v1/messages',
      what: '200,000 blocks in one message',
      body: messages(anthropicBlocks(200_000), 1),
      statuses: [400],
    },
    deepCase('/v1/messages', MESSAGES_PREFIX),
    overLimit('/v1/messages', MESSAGES_PREFIX),
    {
      route: '/v1/messages/count_tokens',
      what: 'a huge valid body (3,000 messages of 80 blocks, 6 MB)',
      body: messages(anthropicBlocks(80), 3000, ''),
      statuses: [200, 400],
    },
    {
      route: '/v1/messages/count_tokens',
      what: '200,000 blocks in one message',
      body: messages(anthropicBlocks(200_000), 1, ''),
      statuses: [400],
    },
    deepCase('/v1/messages/count_tokens', '{"model":"sim-chat","messages":[{"role":"user","content":"hi"}],'),
    {
      route: '/v1/embeddings',
      what: 'a valid body of 2,048 inputs of 40 characters',
      body: `{"model":"sim-embed","input":${jsonArray(`"${'a '.repeat(20)}"`, 2048)}}`,
      statuses: [200, 400],
    },
    {
      route: '/v1/embeddings',
      what: '200,000 inputs',
      body: `{"model":"sim-embed","input":${jsonArray('"a"', 200_000)}}`,
      statuses: [400],
    },
    {
      route: '/v1/embeddings',
      what: '200,000 token arrays',
      body: `{"model":"sim-embed","input":${jsonArray('[1]', 200_000)}}`,
      statuses: [400],
    },
    deepCase('/v1/embeddings', '{"model":"sim-embed","input":"hi",'),
    overLimit('/v1/embeddings', '{"model":"sim-embed","input":"hi",'),
    deepCase('/v1/images/generations', '{"model":"sim-image","prompt":"a cat",'),
    overLimit('/v1/images/generations', '{"model":"sim-image","prompt":"a cat",'),
    {
      route: '/v1/images/generations',
      what: 'a prompt of 9 MB',
      body: `{"model":"sim-image","prompt":"${'a '.repeat(4_500_000)}"}`,
      statuses: [400],
    },
    {
      route: `/v1/chat/completions/${storedId}`,
      what: 'metadata of 200,000 keys',
      body: `{"metadata":{${Array.from({ length: 200_000 }, (_, i) => `"k${i}":"v"`).join(',')}}}`,
      statuses: [400],
    },
    deepCase(`/v1/chat/completions/${storedId}`, '{"metadata":{"a":"b"},'),
    overLimit(`/v1/chat/completions/${storedId}`, '{"metadata":{"a":"b"},'),
  ];
}

interface Result {
  route: string;
  what: string;
  status: number;
  body: string;
  ms: number;
  /** The gateway's CPU seconds while it answered. */
  cpu: number;
}

/**
 * Each costly body gets a clear answer in the route's own shape within generous bounds of time and of the
 * gateway's CPU, never a 5xx, while a paced stream on the same gateway keeps its pace.
 */
describe('faults: validation cost on every route', () => {
  let stack: Stack;
  let storedId = '';

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: CATALOG,
      with: ['embedding-worker'],
      waitForModels: ['sim-chat-long', 'sim-chat', 'sim-image', 'sim-embed'],
    });
    const stored = await stack.post('/v1/chat/completions', {
      model: 'sim-chat',
      store: true,
      max_tokens: 1,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(stored.status).toBe(200);
    storedId = ((await stored.json()) as { id: string }).id;
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('answers each costly body clearly, in bounded time and CPU, in its own error shape, while a stream keeps its pace', async () => {
    const cases = costlyCases(storedId);
    const gateway = stack.processes.get('gateway')!.pid!;
    const results: Result[] = [];
    let lastAnsweredAt = Infinity;
    let sending: Promise<void> = Promise.resolve();
    const { maxGapMs, chunks } = await pacedStreamGaps(stack, 'sim-chat-long', () => {
      // One after the other: each one's cost is its own.
      sending = (async () => {
        for (const { route, what, body } of cases) {
          const cpuBefore = await cpuSeconds(gateway);
          const sentAt = performance.now();
          // A hang shows as this case's failure (status 0), not as the whole test's timeout.
          const answer = await stack
            .post(route, body, { signal: AbortSignal.timeout(30_000) })
            .then(async (response) => ({ status: response.status, text: await response.text() }))
            .catch((error: unknown) => ({ status: 0, text: String(error) }));
          lastAnsweredAt = performance.now();
          const cpu = (await cpuSeconds(gateway)) - cpuBefore;
          results.push({
            route,
            what,
            status: answer.status,
            body: answer.text,
            ms: lastAnsweredAt - sentAt,
            cpu,
          });
        }
      })();
    });
    const streamEndedAt = performance.now();
    await sending;
    process.stdout.write(
      `validation cost per body (route, what: status, ms, gateway CPU s):\n${results
        .map((r) => `  ${r.route}, ${r.what}: ${r.status}, ${r.ms.toFixed(0)} ms, ${r.cpu.toFixed(2)} s`)
        .join('\n')}\n`,
    );
    expect(results).toHaveLength(cases.length);
    for (const [i, { route, what, status, body, ms, cpu }] of results.entries()) {
      const allowed = cases[i]!.statuses;
      expect({ route, what, status }).toEqual({
        route,
        what,
        status: allowed.includes(status) ? status : `one of ${allowed.join(', ')}`,
      });
      if (status !== 200) {
        const parsed = JSON.parse(body) as { type?: unknown; error?: Record<string, unknown> };
        const shape = route.startsWith('/v1/messages')
          ? {
              top: Object.keys(parsed).sort(),
              type: parsed.type,
              error: Object.keys(parsed.error ?? {}).sort(),
            }
          : { top: Object.keys(parsed).sort(), error: Object.keys(parsed.error ?? {}).sort() };
        const expected = route.startsWith('/v1/messages')
          ? { top: ['error', 'type'], type: 'error', error: ['message', 'type'] }
          : { top: ['error'], error: ['code', 'message', 'param', 'type'] };
        expect({ route, what, ...shape }).toEqual({ route, what, ...expected });
      }
      // Generous bounds for a shared 2-core machine: a 10 MB JSON.parse costs ~100 ms when idle.
      expect({ route, what, slow: ms > 10_000, cpuHeavy: cpu > 4 }).toEqual({
        route,
        what,
        slow: false,
        cpuHeavy: false,
      });
    }
    // Every answer came while the stream still ran, so its gaps measured them all.
    expect(lastAnsweredAt).toBeLessThan(streamEndedAt);
    expect(chunks).toBeGreaterThan(200);
    expect(maxGapMs).toBeLessThan(2000);
    for (const [app, child] of stack.processes) expect([app, child.exitCode]).toEqual([app, null]);
  }, 600_000);
});
