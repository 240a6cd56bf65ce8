// A batch at OpenAI's limits (issue 34, "Scale"): a 50,000-line input file of about 150 MB, written to disk,
// uploaded through /v1/files as a stream, then a batch created on it and its lines validated and enqueued;
// meanwhile the gateway's RSS is sampled from /proc, its event-loop delay read from its /metrics, and one
// client sends an interactive request every 50 ms to another model of the same worker (so its latency shows
// what the batch costs the gateway, not a wait for the batch's own model: bench/batches.mjs measures that).
// Prints the RSS growth over the idle gateway's, and per phase the interactive p50/p99 and the loop's delay.
// The batch runs for `--run <s>` once validated (default 10), then is cancelled: running 50,000 lines is the
// capacity bench's subject (bench/batches.mjs), not this one's.
//   npm run build && node bench/batch-scale.mjs [--lines 50000] [--line-kb 3] [--run 10] [--out <file>]
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { startModelStack } from './lib/model-stack.mjs';
import { rssBytes } from './lib/processes.mjs';
import { commandLineOptions } from './lib/options.mjs';

const { fetch } = globalThis;
const root = join(import.meta.dirname, '..');
const args = commandLineOptions();
const LINES = Number(args.lines ?? 50_000);
const LINE_KB = Number(args['line-kb'] ?? 3);
const RUN_S = Number(args.run ?? 10);
const ENDED = ['completed', 'failed', 'expired', 'cancelled'];
const MB = 1024 * 1024;

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** Writes the input file line by line (never whole in memory): its path and size. */
async function writeInput(dir) {
  const path = join(dir, 'input.jsonl');
  const out = createWriteStream(path);
  const filler = 'lorem ipsum dolor sit amet '
    .repeat(Math.ceil((LINE_KB * 1024) / 27))
    .slice(0, LINE_KB * 1024);
  for (let i = 0; i < LINES; i++) {
    const line = JSON.stringify({
      custom_id: `line-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'scale-chat', max_tokens: 4, messages: [{ role: 'user', content: `${i} ${filler}` }] },
    });
    if (!out.write(`${line}\n`)) await new Promise((resolve) => out.once('drain', resolve));
  }
  await new Promise((resolve, reject) => out.end((error) => (error ? reject(error) : resolve())));
  return { path, bytes: (await stat(path)).size };
}

/** A multipart body streamed from the file: the purpose field, then the file part. */
function multipartFrom(path) {
  const boundary = `----mgw-bench-${randomBytes(8).toString('hex')}`;
  const head =
    `--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
    `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="input.jsonl"\r\n` +
    `content-type: application/jsonl\r\n\r\n`;
  async function* parts() {
    yield Buffer.from(head);
    for await (const chunk of createReadStream(path, { highWaterMark: MB })) yield chunk;
    yield Buffer.from(`\r\n--${boundary}--\r\n`);
  }
  return {
    body: Readable.toWeb(Readable.from(parts())),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}

async function main() {
  const tempDir = await mkdtemp(join(tmpdir(), 'mgw-bench-scale-'));
  const input = await writeInput(tempDir);
  const backend = { kind: 'simulator', mode: 'echo', ttftMs: 5, tokensPerSecond: 100_000 };
  const stack = await startModelStack(root, {
    catalog: {
      models: [
        { id: 'scale-chat', type: 'chat', owned_by: 'bench', backend, maxQueueDepth: 10_000 },
        { id: 'probe-chat', type: 'chat', owned_by: 'bench', backend },
      ],
    },
    workerEnv: { WORKER_CONCURRENCY: '8' },
  }).catch(async (error) => {
    await rm(tempDir, { recursive: true, force: true });
    throw error;
  });
  const { gateway, auth, api, chat, gatewayChild } = stack;

  // One interactive client, a request every 50 ms; each latency is tagged with the phase it started in.
  let phase = 'idle';
  let probing = true;
  const latencies = new Map();
  const probe = async () => {
    while (probing) {
      const tag = phase;
      const { status, ms } = await chat('probe-chat', 4);
      if (status === 200) {
        const list = latencies.get(tag) ?? [];
        list.push(ms);
        latencies.set(tag, list);
      }
      await sleep(50);
    }
  };
  // The gateway's RSS, every 100 ms, by phase.
  const rss = new Map();
  let sampling = true;
  const sample = async () => {
    while (sampling) {
      const bytes = rssBytes(gatewayChild.pid);
      if (bytes !== null) rss.set(phase, Math.max(rss.get(phase) ?? 0, bytes));
      await sleep(100);
    }
  };

  // The gateway's event-loop delay: prom-client resets its histogram at each scrape, so each read is the
  // worst delay since the one before; once a second, as a scrape is itself work on the gateway's loop.
  const loopDelay = new Map();
  let scraping = true;
  const scrape = async () => {
    while (scraping) {
      const tag = phase;
      const text = await fetch(`${gateway}/metrics`)
        .then((res) => res.text())
        .catch(() => '');
      const max = /^nodejs_eventloop_lag_max_seconds(?:{[^}]*})? (\S+)$/m.exec(text);
      if (max) loopDelay.set(tag, Math.max(loopDelay.get(tag) ?? 0, Number(max[1]) * 1000));
      await sleep(1000);
    }
  };

  try {
    const load = loadavg();
    console.log(
      `batch scale bench: ${LINES} lines, ${(input.bytes / MB).toFixed(1)} MB; load average at start ${load.map((l) => l.toFixed(2)).join(' ')}`,
    );
    const probing$ = probe();
    const sampling$ = sample();
    const scraping$ = scrape();
    await sleep(5000); // the idle gateway's figures

    phase = 'upload';
    const uploadStarted = performance.now();
    const { body, contentType } = multipartFrom(input.path);
    const uploaded = await fetch(`${gateway}/v1/files`, {
      method: 'POST',
      headers: { ...auth, 'content-type': contentType },
      body,
      duplex: 'half',
    });
    if (!uploaded.ok) throw new Error(`upload: ${uploaded.status} ${await uploaded.text()}`);
    const file = await uploaded.json();
    const uploadSeconds = (performance.now() - uploadStarted) / 1000;

    phase = 'validate+enqueue';
    const validateStarted = performance.now();
    let batch = await api('/v1/batches', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        input_file_id: file.id,
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
      }),
    });
    let validatedSeconds = null;
    let cancelled = false;
    let cancelStarted = null;
    while (!ENDED.includes(batch.status)) {
      await sleep(500);
      batch = await api(`/v1/batches/${batch.id}`);
      if (validatedSeconds === null && batch.status !== 'validating') {
        validatedSeconds = (performance.now() - validateStarted) / 1000;
        phase = 'running';
      }
      const ranSeconds = (performance.now() - validateStarted) / 1000 - (validatedSeconds ?? Infinity);
      if (!cancelled && ranSeconds >= RUN_S) {
        cancelled = true;
        phase = 'cancel';
        cancelStarted = performance.now();
        // A batch that ended meanwhile answers 409: nothing is left to cancel.
        await api(`/v1/batches/${batch.id}/cancel`, { method: 'POST' }).catch((error) => {
          if (!String(error).includes(': 409 ')) throw error;
        });
      }
    }
    const runSeconds = (performance.now() - validateStarted) / 1000 - (validatedSeconds ?? 0);
    // From the cancel request to the ended status seen (polled every 500 ms).
    const cancelSeconds = cancelStarted === null ? null : (performance.now() - cancelStarted) / 1000;
    phase = 'after';
    await sleep(3000);
    probing = false;
    sampling = false;
    scraping = false;
    await Promise.all([probing$, sampling$, scraping$]);

    const idleRss = rss.get('idle');
    const peak = Math.max(...[...rss.values()]);
    console.log(
      `upload ${uploadSeconds.toFixed(1)} s (${(input.bytes / MB / uploadSeconds).toFixed(0)} MB/s); validation ` +
        `${validatedSeconds?.toFixed(1)} s; ${batch.status}: ${batch.request_counts.completed} completed, ${batch.request_counts.failed} failed in ${runSeconds.toFixed(1)} s after it` +
        (cancelSeconds === null ? '' : `; cancel to ${batch.status} ${cancelSeconds.toFixed(1)} s`),
    );
    console.log(
      `gateway RSS: idle ${(idleRss / MB).toFixed(0)} MB, peak ${(peak / MB).toFixed(0)} MB (growth ${((peak - idleRss) / MB).toFixed(0)} MB; target < 100 MB); peak by phase: ${[
        ...rss,
      ]
        .map(([name, bytes]) => `${name} ${(bytes / MB).toFixed(0)} MB`)
        .join(', ')}`,
    );
    const result = {
      load_average: load,
      lines: LINES,
      bytes: input.bytes,
      uploadSeconds,
      validatedSeconds,
      runSeconds,
      cancelSeconds,
      batch,
      rss: {},
      interactive: {},
      loopDelayMaxMs: Object.fromEntries(loopDelay),
    };
    for (const [name, bytes] of rss) result.rss[name] = bytes;
    for (const name of ['idle', 'upload', 'validate+enqueue', 'running', 'cancel', 'after']) {
      const list = (latencies.get(name) ?? []).sort((a, b) => a - b);
      if (list.length === 0) continue;
      result.interactive[name] = {
        requests: list.length,
        p50: percentile(list, 50),
        p99: percentile(list, 99),
      };
      console.log(
        `interactive during ${name.padEnd(16)} ${String(list.length).padStart(5)} requests  p50 ${percentile(list, 50).toFixed(1).padStart(7)} ms  p99 ${percentile(list, 99).toFixed(1).padStart(7)} ms  gateway loop delay max ${(loopDelay.get(name) ?? NaN).toFixed(1).padStart(6)} ms`,
      );
    }
    if (args.out) await writeFile(args.out, JSON.stringify(result, null, 2));
  } finally {
    probing = false;
    sampling = false;
    scraping = false;
    await stack.stop();
    await rm(tempDir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
