// Prompt reuse on the in-process llamacpp backend (issue 31): a conversation's turns run on the sequence that
// holds its history, so a turn evaluates only its new tokens. Runs the built backend on a GGUF (by default
// the test suite's tiny random-weight llama, written to a temp dir; any chat GGUF with --model), with
// `--sequences` sequences: `--conversations` conversations of `--turns` turns each, interleaved turn by turn,
// each opening with a system prompt of about `--system-words` words. Prints per turn: mean time to the first
// token, and the prompt tokens evaluated against those reused from the KV cache.
//   npm run build && node bench/llamacpp-prompt-reuse.mjs [--model x.gguf] [--sequences 4] [--conversations 3]
//     [--turns 4] [--system-words 300]
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const { AbortController } = globalThis;
const root = join(import.meta.dirname, '..');
const require = createRequire(import.meta.url);
require('reflect-metadata');
const args = Object.fromEntries(
  process.argv.slice(2).flatMap((arg, i, all) => (arg.startsWith('--') ? [[arg.slice(2), all[i + 1]]] : [])),
);
const sequences = Number(args.sequences ?? 4);
const conversations = Number(args.conversations ?? 3);
const turns = Number(args.turns ?? 4);
const systemWords = Number(args['system-words'] ?? 300);

const { LlamaCppChatBackend } = require(
  join(root, 'dist/libs/backend-llamacpp/src/llamacpp-chat.backend.js'),
);

let dir = null;
let modelPath = args.model;
if (modelPath === undefined) {
  // The fixture is TypeScript: bundled on the fly, its one import of the inference lib pointed at the build.
  const { build } = require('esbuild');
  dir = await mkdtemp(join(tmpdir(), 'llamacpp-reuse-'));
  const writer = join(dir, 'writer.cjs');
  await build({
    entryPoints: [join(root, 'test/fixtures/gguf/tiny-llama.gguf-writer.ts')],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    outfile: writer,
    alias: { '@mgw/inference': join(root, 'dist/libs/inference/src/seeded-random.js') },
    logLevel: 'error',
  });
  modelPath = join(dir, 'tiny-llama.gguf');
  await require(writer).writeTinyLlamaGguf(modelPath, { seed: 7, contextLength: 8192 });
}

const backend = new LlamaCppChatBackend('bench', {
  modelPath,
  contextSize: 4096,
  sequences,
  threads: 1,
  gpuLayers: 0,
  batchSize: null,
});
await backend.load();

const words = (n, seed) => Array.from({ length: n }, (_, i) => `word${(i * 7 + seed) % 97}`).join(' ');
const request = (messages) => ({
  messages,
  n: 1,
  maxTokens: 8,
  stop: [],
  temperature: 0,
  topP: 1,
  presencePenalty: 0,
  frequencyPenalty: 0,
  seed: 1,
  user: null,
  tools: [],
  toolChoice: { type: 'none' },
  parallelToolCalls: true,
  responseFormat: { type: 'text' },
  logprobs: false,
  topLogprobs: 0,
});

const histories = Array.from({ length: conversations }, (_, c) => [
  { role: 'system', content: `Conversation ${c}. ${words(systemWords, c)}` },
]);
console.log(`${modelPath}, ${sequences} sequences, ${conversations} conversations × ${turns} turns`);
console.log('turn  mean TTFT ms  prompt tokens  reused from cache');
for (let turn = 1; turn <= turns; turn++) {
  let ttft = 0;
  let promptTokens = 0;
  const reusedBefore = backend.promptReuse.reusedPromptTokens;
  for (const history of histories) {
    history.push({ role: 'user', content: `Question ${turn}: ${words(40, turn)}` });
    const started = performance.now();
    let answer = '';
    let first = null;
    for await (const event of backend.generate(request(history), new AbortController().signal)) {
      if (event.type === 'delta') {
        first ??= performance.now() - started;
        answer += event.text;
      }
      if (event.type === 'usage') promptTokens += event.promptTokens;
    }
    ttft += first ?? performance.now() - started;
    history.push({ role: 'assistant', content: answer });
  }
  const reused = backend.promptReuse.reusedPromptTokens - reusedBefore;
  console.log(
    `${String(turn).padStart(4)}  ${(ttft / conversations).toFixed(1).padStart(12)}  ${String(promptTokens).padStart(13)}  ${String(reused).padStart(17)}`,
  );
}
await backend.close();
if (dir !== null) await rm(dir, { recursive: true, force: true });
