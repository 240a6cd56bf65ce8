// Micro-benchmark of the gateway's per-token work on a reply frame: checking each message of an already
// JSON-parsed frame (`parseReplyRecord`), and the whole frame from text. Compare two builds of contracts:
//   node bench/reply-parser.micro.mjs dist            # this build (npm run build first)
//   node bench/reply-parser.micro.mjs dist-before     # another one, e.g. `cp -r dist dist-before` on main
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';

const distDir = resolve(process.argv[2] ?? 'dist');
const require = createRequire(import.meta.url);
require('reflect-metadata');
const contracts = require(join(distDir, 'libs/contracts/src/index.js'));
const { parseReplyFrame, parseReplyRecord, encodeReplyFrame } = contracts;

const requestId = 'req_0123456789abcdef';
// As workers write them: every message carries the reply protocol's version (a build before versions
// ignores the field, so both builds read the same bytes).
const v = 1;
const messages = [
  { v, requestId, seq: 0, kind: 'started', workerId: 'chat-host-1-abc' },
  ...Array.from({ length: 14 }, (_, i) => ({
    v,
    requestId,
    seq: i + 1,
    kind: 'delta',
    choice: 0,
    content: ' token',
  })),
  {
    v,
    requestId,
    seq: 15,
    kind: 'chat-done',
    finishReasons: ['stop'],
    usage: { prompt_tokens: 12, completion_tokens: 14 },
  },
];
const frame = encodeReplyFrame(messages.map((m) => JSON.stringify(m)));
const records = JSON.parse(frame);

function time(label, rounds, perRound, body) {
  for (let i = 0; i < perRound; i++) body(); // warm-up
  const samples = [];
  for (let r = 0; r < rounds; r++) {
    // CPU time of this process rather than wall time: the machine is shared, and waiting for a core is not cost.
    const start = process.cpuUsage();
    for (let i = 0; i < perRound; i++) body();
    const used = process.cpuUsage(start);
    samples.push(((used.user + used.system) * 1000) / perRound / messages.length);
  }
  samples.sort((a, b) => a - b);
  const median = samples[Math.floor(samples.length / 2)];
  console.log(
    `${label}: median ${median.toFixed(1)} ns of CPU per message (min ${samples[0].toFixed(1)}, max ${samples.at(-1).toFixed(1)}, ${rounds} rounds)`,
  );
}

let sink = 0;
time('parseReplyRecord', 21, 5_000, () => {
  for (const record of records) sink += parseReplyRecord(record).seq;
});
time('parseReplyFrame + parseReplyRecord', 21, 2_000, () => {
  for (const record of parseReplyFrame(frame)) sink += parseReplyRecord(record).seq;
});
if (sink === 42) console.log('');
