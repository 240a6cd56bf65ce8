// A valid chat body of many tiny content parts (issue 21): 4096 messages of 95 empty text parts (10.2 MB,
// under the default 10 MiB body limit).
//   node bench/many-parts.mjs [dist] [--rounds 7] [--stack]
// In-process, CPU ms per body (median of the rounds): JSON.parse alone, for scale; the gateway's validation
// (`validateChatRequest`, or `validateDto` in a build before it, with the default limits); the worker's validation of the same request as a job; then two
// bodies a validator may read message by message: the same body with its last part invalid
// (refused), and as a tool loop (one assistant message with a refusal).
// --stack: the real apps from <dist> on a private Redis (bench/lib/stack.mjs). A stream paced at 20 chunks/s
// runs while four such bodies arrive one after another: one for a model the gateway does not know (404 after the
// body is validated), one with its last part invalid (400), one answered (200, four tokens) and one its
// worker refuses (400: 4096 messages do not fit its model's 4096-token context); prints each one's wall time
// and the stream's largest gap between two chunks.
// Compare builds: `cp -r dist dist-before` on the branch point, then run this with dist-before and dist.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at === -1 ? fallback : Number(args[at + 1]);
};
const dist = args.find((arg, i) => !arg.startsWith('--') && !args[i - 1]?.startsWith('--rounds')) ?? 'dist';
const distDir = resolve(dist);
const ROUNDS = option('rounds', 7);
const MESSAGES = 4096;
const PARTS = 95;

const { fetch, TextDecoder } = globalThis;
const require = createRequire(import.meta.url);
require('reflect-metadata');
const contracts = require(join(distDir, 'libs/contracts/src/index.js'));
// The job protocol's home since libs/request; an older build (the tree compared with) has it in contracts.
const jobs = existsSync(join(distDir, 'libs/request/src/index.js'))
  ? require(join(distDir, 'libs/request/src/index.js'))
  : contracts;
const { ChatCompletionRequestDto, REQUEST_SIZE_DEFAULTS, validateChatRequest, validateDto } = contracts;
const { ChatJobData } = jobs;
// The worker's job reader where the build has one; before it, the worker called validateDto itself.
const readJob = jobs.readJobData ?? ((cls, plain) => validateDto(cls, plain));
// Since the neutral request, the worker reads a chat job of any version into it.
const readChatJob = jobs.readChatJob ?? ((plain) => readJob(ChatJobData, plain));

const body = (model) => ({
  model,
  max_tokens: 4,
  messages: Array.from({ length: MESSAGES }, () => ({
    role: 'user',
    content: Array.from({ length: PARTS }, () => ({ type: 'text', text: '' })),
  })),
});
const valid = JSON.stringify(body('sim-chat'));
const invalidPlain = body('sim-chat');
invalidPlain.messages[MESSAGES - 1].content[PARTS - 1] = { type: 'text', text: 1 };
const invalid = JSON.stringify(invalidPlain);
const toolLoopPlain = body('sim-chat');
toolLoopPlain.messages[0] = { role: 'assistant', content: null, refusal: 'No.' };
const toolLoop = JSON.stringify(toolLoopPlain);
const job = JSON.stringify({
  v: 1,
  requestId: 'req_0123456789abcdef',
  model: 'sim-chat',
  replyTo: 'bench:reply:gw',
  deadline: Date.now() + 3_600_000,
  enqueuedAt: Date.now(),
  request: JSON.parse(valid),
});

/** CPU ms of `run` on a fresh parse of `text` (the parse itself not counted), median of the rounds. */
function cpuMs(text, run) {
  const samples = [];
  let outcome = '';
  for (let round = 0; round < ROUNDS; round++) {
    const plain = JSON.parse(text);
    const start = process.cpuUsage();
    try {
      run(plain);
      outcome = 'accepted';
    } catch (error) {
      outcome = `refused: ${error.message.slice(0, 60)}…`;
    }
    const used = process.cpuUsage(start);
    samples.push((used.user + used.system) / 1000);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[Math.floor(samples.length / 2)], min: samples[0], max: samples.at(-1), outcome };
}

function cpuMsOf(run) {
  const samples = [];
  for (let round = 0; round < ROUNDS; round++) {
    const start = process.cpuUsage();
    run();
    const used = process.cpuUsage(start);
    samples.push((used.user + used.system) / 1000);
  }
  samples.sort((a, b) => a - b);
  return {
    median: samples[Math.floor(samples.length / 2)],
    min: samples[0],
    max: samples.at(-1),
    outcome: '',
  };
}

const line = (label, { median, min, max, outcome }) =>
  console.log(
    `${label.padEnd(34)} ${median.toFixed(1).padStart(7)} ms  (min ${min.toFixed(1)}, max ${max.toFixed(1)})  ${outcome}`,
  );

console.log(
  `${dist}: ${MESSAGES} messages × ${PARTS} parts, ${(valid.length / 1e6).toFixed(1)} MB; CPU ms, median of ${ROUNDS}`,
);
line(
  'JSON.parse of the body',
  cpuMsOf(() => JSON.parse(valid)),
);
// The chat schema's validator since it replaced the class-validator DTO; the DTO in a build before it.
const validate = validateChatRequest
  ? (plain) => validateChatRequest(plain, REQUEST_SIZE_DEFAULTS)
  : (plain) => validateDto(ChatCompletionRequestDto, plain, REQUEST_SIZE_DEFAULTS);
line('gateway: validate the body', cpuMs(valid, validate));
line('worker: validate the job', cpuMs(job, readChatJob));
line('gateway: last part invalid', cpuMs(invalid, validate));
line('gateway: the body as a tool loop', cpuMs(toolLoop, validate));

if (args.includes('--stack')) await onStack();

async function onStack() {
  process.env.BENCH_DIST = dist;
  const { BenchStack } = await import('./lib/stack.mjs');
  const simulator = { kind: 'simulator', mode: 'echo' };
  const stack = await BenchStack.start(resolve(import.meta.dirname, '..'), {
    catalog: {
      models: [
        {
          id: 'sim-paced',
          type: 'chat',
          owned_by: 'bench',
          backend: { kind: 'simulator', mode: 'words', tokensPerSecond: 20, maxWords: 100 },
        },
        { id: 'sim-chat', type: 'chat', owned_by: 'bench', backend: simulator },
        { id: 'sim-small', type: 'chat', owned_by: 'bench', contextTokens: 4096, backend: simulator },
      ],
    },
    env: { WORKER_CONCURRENCY: '8' },
  });
  try {
    const post = (text) =>
      fetch(`${stack.gatewayUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: stack.headers(),
        body: text,
      });
    const timed = async (label, text) => {
      const started = performance.now();
      const response = await post(text);
      const answer = await response.json();
      const ms = performance.now() - started;
      return { label, status: response.status, code: answer.error?.code ?? answer.error?.type ?? '', ms };
    };
    const withModel = (model) => JSON.stringify({ ...JSON.parse(valid), model });
    const [unknown, small] = [withModel('no-such-model'), withModel('sim-small')];
    let answers = null;
    const stream = await post(
      JSON.stringify({ model: 'sim-paced', stream: true, messages: [{ role: 'user', content: 'Go.' }] }),
    );
    const decoder = new TextDecoder();
    let last = null;
    let maxGapMs = 0;
    let chunks = 0;
    for await (const bytes of stream.body) {
      const now = performance.now();
      const events = decoder
        .decode(bytes, { stream: true })
        .split('\n')
        .filter((l) => l.startsWith('data: '));
      if (events.length === 0) continue;
      if (last === null) {
        // One after another: each one's time is its own, not the queue behind the others.
        answers = (async () => [
          await timed('unknown model', unknown),
          await timed('last part invalid', invalid),
          await timed('answered (4 tokens)', valid),
          await timed('refused by its worker (context)', small),
        ])();
      } else maxGapMs = Math.max(maxGapMs, now - last);
      last = now;
      chunks += events.length;
    }
    for (const { label, status, code, ms } of await answers) {
      console.log(
        `stack: ${label.padEnd(34)} ${status} ${code.padEnd(24)} ${ms.toFixed(0).padStart(6)} ms wall`,
      );
    }
    console.log(
      `stack: paced stream alongside: ${chunks} chunks, largest gap ${maxGapMs.toFixed(0)} ms (50 ms nominal)`,
    );
  } finally {
    await stack.stop();
  }
}
