// Prefix-aware routing (issue 31): four vLLM-like upstreams (test/support/vllm-like-upstream.mjs, one process:
// 4 slots each, a prefix cache whose prefill costs --prefill-us µs per uncached token, 16 output tokens of
// --decode-ms each) behind two catalog models on the same servers — `prefix-chat` (routing "prefix") and
// `ll-chat` (routing "least-loaded") — served by one chat worker and one gateway on a private Redis. Two
// scenarios, each run on both models in turn (--rounds times, caches emptied before every run): 12
// conversations of 6 turns at once (a 500-token system prompt and a 1,500-token first message each), and 24
// conversations of 4 turns sharing one 20k-token system prompt. Prints, per model: the share of follow-up turns
// whose history was cached on the upstream that served them, the share that stayed on their conversation's
// upstream, mean and p90 latency per turn, and the requests each upstream served. See bench/README.md.
//   npm run build && node bench/prefix-routing.mjs [--rounds 2] [--prefill-us 150] [--decode-ms 8]
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { BenchStack } from './lib/stack.mjs';
import { commandLineOptions } from './lib/options.mjs';

const { fetch } = globalThis;
const root = join(import.meta.dirname, '..');
const args = commandLineOptions();
const ROUNDS = Number(args.rounds ?? 2);
const PREFILL_US = Number(args['prefill-us'] ?? 150);
const DECODE_MS = Number(args['decode-ms'] ?? 8);
const SLOTS = 4;

const filler = (seed, tokens) => `${seed} ${'lorem '.repeat(Math.ceil((tokens * 4) / 6))}`;

const fixture = spawn(
  process.execPath,
  [
    join(root, 'test', 'support', 'vllm-like-upstream.mjs'),
    ...['--upstreams', '4', '--slots', String(SLOTS), '--prefill-us', String(PREFILL_US)],
    ...['--decode-ms', String(DECODE_MS)],
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const [line] = await once(createInterface({ input: fixture.stdout }), 'line');
const { ports } = JSON.parse(line);
const control = async (i, path, body) => {
  const res = await fetch(`http://127.0.0.1:${ports[i]}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return res.json();
};

const upstreams = ports.map((port, i) => ({
  name: `u${i}`,
  baseUrl: `http://127.0.0.1:${port}/v1`,
  maxConcurrency: SLOTS,
  // Stated: the bench's in-process baseline builds the backend without a worker concurrency to default to.
  maxConnections: 16,
}));
const model = (id, routing) => ({
  id,
  type: 'chat',
  owned_by: 'bench',
  backend: { kind: 'openai', upstreamModel: 'vllm-model', routing, upstreams },
});
const stack = await BenchStack.start(root, {
  catalog: { models: [model('prefix-chat', 'prefix'), model('ll-chat', 'least-loaded')] },
  env: { DEFAULT_CHAT_MODEL: 'prefix-chat' },
  appEnv: { 'chat-worker': { WORKER_CONCURRENCY: '32' } },
}).catch(async (error) => {
  fixture.kill('SIGTERM');
  await once(fixture, 'exit');
  throw error;
});

async function ask(id, messages) {
  const res = await fetch(`${stack.gatewayUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: stack.headers(),
    body: JSON.stringify({ model: id, messages }),
  });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`${res.status}: ${JSON.stringify(body)}`);
  return body.choices[0].message.content;
}

async function run(id, tag, conversations, turns, system) {
  await Promise.all(ports.map((_, i) => control(i, '/_reset', { cache: true })));
  const latencies = [];
  await Promise.all(
    Array.from({ length: conversations }, async (_, c) => {
      const messages = [
        { role: 'system', content: system },
        { role: 'user', content: filler(`${tag} conversation ${c}: summarise this document.`, 1500) },
      ];
      for (let turn = 0; turn < turns; turn++) {
        const startedAt = performance.now();
        const answer = await ask(id, messages);
        latencies.push(performance.now() - startedAt);
        messages.push(
          { role: 'assistant', content: answer },
          { role: 'user', content: filler(`follow-up ${turn} of ${c}`, 150) },
        );
      }
    }),
  );
  const served = await Promise.all(ports.map((_, i) => control(i, '/_log')));
  const followUps = served.flat().filter((s) => s.messages > 2);
  const byConversation = new Map();
  served.forEach((requests, upstream) => {
    for (const r of requests.filter((s) => s.messages > 2)) {
      const seen = byConversation.get(r.firstUser) ?? [0, 0, 0, 0];
      seen[upstream]++;
      byConversation.set(r.firstUser, seen);
    }
  });
  const stayed = [...byConversation.values()].reduce((sum, seen) => sum + Math.max(...seen), 0);
  latencies.sort((a, b) => a - b);
  return {
    hit: followUps.filter((s) => s.historyCached).length / followUps.length,
    stayed: stayed / followUps.length,
    mean: latencies.reduce((a, b) => a + b, 0) / latencies.length,
    p90: latencies[Math.floor(latencies.length * 0.9)],
    served: served.map((s) => s.length),
  };
}

const scenarios = [
  {
    name: '12 conversations × 6 turns',
    conversations: 12,
    turns: 6,
    system: filler('You are helpful.', 500),
  },
  {
    name: '24 conversations × 4 turns, one 20k-token system prompt',
    conversations: 24,
    turns: 4,
    system: filler('You are Claude Code, an agentic coding tool.', 20_000),
  },
];
const pct = (x) => `${(x * 100).toFixed(0)} %`;
try {
  console.log(
    `prefill ${PREFILL_US} µs per uncached token, ${DECODE_MS} ms per output token, ${ROUNDS} round(s)`,
  );
  console.log(
    '| scenario | routing | round | history cached | stayed on one upstream | mean | p90 | served per upstream |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const scenario of scenarios) {
    for (let round = 1; round <= ROUNDS; round++) {
      // The two take turns: neither always runs on the warmer machine.
      const order = round % 2 === 1 ? ['prefix-chat', 'll-chat'] : ['ll-chat', 'prefix-chat'];
      for (const id of order) {
        const r = await run(id, `${id}-${round}`, scenario.conversations, scenario.turns, scenario.system);
        console.log(
          `| ${scenario.name} | ${id === 'prefix-chat' ? 'prefix' : 'least-loaded'} | ${round} | ${pct(r.hit)} | ` +
            `${pct(r.stayed)} | ${r.mean.toFixed(0)} ms | ${r.p90.toFixed(0)} ms | ${r.served.join('/')} |`,
        );
      }
    }
  }
} finally {
  await stack.stop();
  fixture.kill('SIGTERM');
  await once(fixture, 'exit');
}
