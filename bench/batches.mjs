// Batches in idle capacity (issue 34): one model over one fake OpenAI-compatible upstream of fixed capacity
// (a real HTTP server in this process: 4 slots, 100 ms a request), served by one chat-worker of 4 slots and one
// gateway on a private Redis. Prints (1) a batch alone: its lines per second against the upstream's capacity;
// (2) an interactive flood's latency (p50/p99) without, then with a batch running, and the batch's pace
// during the flood. See bench/README.md.
//   npm run build && node bench/batches.mjs [--lines 5000] [--flood <s>] [--clients 8] [--jitter <ms>] [--out <file>]
import { createServer } from 'node:http';
import { writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { startModelStack } from './lib/model-stack.mjs';
import { commandLineOptions } from './lib/options.mjs';

const { FormData, Blob } = globalThis;
const root = join(import.meta.dirname, '..');
const args = commandLineOptions();
const LINES = Number(args.lines ?? 5000);
const FLOOD_S = Number(args.flood ?? 20);
const CLIENTS = Number(args.clients ?? 8);
const SLOTS = 4;
const SERVICE_MS = 100;
// Each request's service time is drawn from SERVICE_MS ± JITTER (uniform): the slots drift apart, as with real
// models' varied answers, instead of finishing together.
const JITTER_MS = Number(args.jitter ?? 0);
const ENDED = ['completed', 'failed', 'expired', 'cancelled'];

/** The upstream: answers every chat request after SERVICE_MS; counts what it served and how busy it was. */
class FakeUpstream {
  inFlight = 0;
  maxInFlight = 0;
  served = 0;
  busyMs = 0;

  constructor() {
    this.server = createServer((req, res) => this.handle(req, res));
  }

  async listen() {
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = this.server.address().port;
  }

  handle(req, res) {
    if (req.method === 'GET' && req.url.endsWith('/models')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'bench-llama', object: 'model' }] }));
      return;
    }
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', async () => {
      const startedAt = performance.now();
      this.inFlight++;
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
      const streamed = JSON.parse(Buffer.concat(chunks).toString()).stream === true;
      await sleep(SERVICE_MS + JITTER_MS * (2 * Math.random() - 1));
      const usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 };
      if (streamed) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const send = (data) =>
          res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
        const chunk = (delta, finish) => ({
          object: 'chat.completion.chunk',
          choices: [{ index: 0, delta, finish_reason: finish }],
        });
        send(chunk({ role: 'assistant', content: 'ok done' }, null));
        send(chunk({}, 'stop'));
        send({ object: 'chat.completion.chunk', choices: [], usage });
        send('[DONE]');
        res.end();
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            object: 'chat.completion',
            choices: [
              { index: 0, message: { role: 'assistant', content: 'ok done' }, finish_reason: 'stop' },
            ],
            usage,
          }),
        );
      }
      this.inFlight--;
      this.served++;
      this.busyMs += performance.now() - startedAt;
    });
  }

  /** Requests a second its slots can serve at the service time it measured (a loaded box's timers run late). */
  capacity() {
    const serviceMs = this.served > 0 ? this.busyMs / this.served : SERVICE_MS;
    return { serviceMs, perSecond: (SLOTS * 1000) / serviceMs };
  }
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function main() {
  const upstream = new FakeUpstream();
  await upstream.listen();
  const catalog = {
    models: [
      {
        id: 'bench-chat',
        type: 'chat',
        owned_by: 'bench',
        backend: {
          kind: 'openai',
          upstreamModel: 'bench-llama',
          upstreams: [{ name: 'u', baseUrl: `http://127.0.0.1:${upstream.port}/v1`, maxConcurrency: SLOTS }],
        },
      },
    ],
  };
  // The worker's slots are the upstream's: the model's capacity is 4 requests at a time.
  const stack = await startModelStack(root, { catalog, workerEnv: { WORKER_CONCURRENCY: String(SLOTS) } });
  const { api, chat } = stack;
  const createBatch = async (lines, tag) => {
    const text = Array.from({ length: lines }, (_v, i) =>
      JSON.stringify({
        custom_id: `${tag}-${i}`,
        method: 'POST',
        url: '/v1/chat/completions',
        body: { model: 'bench-chat', max_tokens: 2, messages: [{ role: 'user', content: `line ${i}` }] },
      }),
    ).join('\n');
    const form = new FormData();
    form.append('purpose', 'batch');
    form.append('file', new Blob([`${text}\n`], { type: 'application/jsonl' }), `${tag}.jsonl`);
    const file = await api('/v1/files', { method: 'POST', body: form });
    return api('/v1/batches', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        input_file_id: file.id,
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
      }),
    });
  };
  const batchOf = (id) => api(`/v1/batches/${id}`);
  const doneOf = (batch) => batch.request_counts.completed + batch.request_counts.failed;

  /** A closed loop of CLIENTS interactive requests for FLOOD_S seconds; latencies in ms. */
  const flood = async () => {
    const latencies = [];
    let errors = 0;
    const until = Date.now() + FLOOD_S * 1000;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (Date.now() < until) {
          const { status, ms } = await chat('bench-chat', 2);
          if (status === 200) latencies.push(ms);
          else errors++;
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    return {
      requests: latencies.length,
      errors,
      perSecond: latencies.length / FLOOD_S,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
    };
  };

  try {
    const load = loadavg();
    console.log(
      `batches bench: upstream ${SLOTS} slots × ${SERVICE_MS}${JITTER_MS > 0 ? ` ± ${JITTER_MS}` : ''} ms ` +
        `(${(SLOTS * 1000) / SERVICE_MS} req/s nominal), ` +
        `one chat-worker of ${SLOTS}; load average at start ${load.map((l) => l.toFixed(2)).join(' ')}`,
    );

    // (1) A batch alone: from its first line run to its last, lines a second against the capacity.
    Object.assign(upstream, { served: 0, busyMs: 0 });
    const alone = await createBatch(LINES, 'alone');
    let batch = alone;
    let firstAt = null;
    let firstDone = 0;
    while (!ENDED.includes(batch.status)) {
      await sleep(250);
      batch = await batchOf(alone.id);
      if (firstAt === null && doneOf(batch) > 0) {
        firstAt = performance.now();
        firstDone = doneOf(batch);
      }
    }
    const aloneSeconds = (performance.now() - firstAt) / 1000;
    const alonePerSecond = (doneOf(batch) - firstDone) / aloneSeconds;
    const aloneCapacity = upstream.capacity();
    const nominal = (SLOTS * 1000) / SERVICE_MS;
    const result = {
      load_average: load,
      lines: LINES,
      jitter_ms: JITTER_MS,
      alone: {
        status: batch.status,
        request_counts: batch.request_counts,
        seconds: aloneSeconds,
        lines_per_second: alonePerSecond,
        capacity_per_second: aloneCapacity.perSecond,
        measured_service_ms: aloneCapacity.serviceMs,
        of_capacity: alonePerSecond / aloneCapacity.perSecond,
        of_nominal: alonePerSecond / nominal,
        upstream_max_in_flight: upstream.maxInFlight,
      },
    };
    console.log(
      `(1) ${LINES}-line batch alone: ${batch.status}, ${alonePerSecond.toFixed(1)} lines/s over ${aloneSeconds.toFixed(1)} s = ` +
        `${(100 * result.alone.of_capacity).toFixed(1)} % of capacity (${aloneCapacity.perSecond.toFixed(1)} req/s at the measured ` +
        `${aloneCapacity.serviceMs.toFixed(1)} ms), ${(100 * result.alone.of_nominal).toFixed(1)} % of nominal; upstream max in flight ${upstream.maxInFlight}`,
    );

    // (2) The same flood without, then with a batch running.
    await flood(); // warm-up, not counted: connections, caches
    const without = await flood();
    const busy = await createBatch(LINES, 'busy');
    await sleep(3000); // the batch validated and its lines queued
    const before = doneOf(await batchOf(busy.id));
    const withBatch = await flood();
    const after = await batchOf(busy.id);
    const batchPerSecond = (doneOf(after) - before) / FLOOD_S;
    await api(`/v1/batches/${busy.id}/cancel`, { method: 'POST' }).catch(() => undefined);
    result.flood = {
      clients: CLIENTS,
      seconds: FLOOD_S,
      without,
      with_batch: withBatch,
      p99_ratio: withBatch.p99 / without.p99,
      batch_lines_per_second_during_flood: batchPerSecond,
      batch_share_of_capacity: batchPerSecond / aloneCapacity.perSecond,
    };
    const row = (name, f) =>
      `    ${name.padEnd(14)} ${f.perSecond.toFixed(1).padStart(6)} req/s  p50 ${f.p50.toFixed(0).padStart(5)} ms  p99 ${f.p99.toFixed(0).padStart(5)} ms  errors ${f.errors}`;
    console.log(`(2) interactive flood, ${CLIENTS} clients in a closed loop, ${FLOOD_S} s each:`);
    console.log(row('without batch', without));
    console.log(row('with batch', withBatch));
    console.log(
      `    p99 with/without ${result.flood.p99_ratio.toFixed(2)}×; the batch meanwhile ${batchPerSecond.toFixed(1)} lines/s ` +
        `(${(100 * result.flood.batch_share_of_capacity).toFixed(1)} % of capacity)`,
    );
    if (args.out) await writeFile(args.out, JSON.stringify(result, null, 2));
  } finally {
    await stack.stop();
    upstream.server.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
