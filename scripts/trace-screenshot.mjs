// Renders one request's trace as the docs show it (docs/images/trace-streamed-chat.png): the stack from dist/
// (as `npm start` runs it, on a private Redis) exporting OTLP/HTTP JSON to a receiver in this process, one
// streamed chat request through the `openai` backend to a scripted upstream in this process, then the spans of
// its trace drawn as a waterfall and photographed with Debian's Chromium (playwright-core).
//   npm run build && node scripts/trace-screenshot.mjs [--out docs/images/trace-streamed-chat.png]
import { createServer } from 'node:http';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium } from 'playwright-core';
import { BenchStack } from '../bench/lib/stack.mjs';

const root = join(import.meta.dirname, '..');
const outIndex = process.argv.indexOf('--out');
const out =
  outIndex > 0 ? process.argv[outIndex + 1] : join(root, 'docs', 'images', 'trace-streamed-chat.png');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const { fetch } = globalThis;

/** OTLP/HTTP JSON exports, flattened to spans with their process's service name. */
function startReceiver() {
  const spans = [];
  const value = (v) => v.stringValue ?? v.intValue ?? v.doubleValue ?? v.boolValue ?? '';
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const resourceSpans of body.resourceSpans ?? []) {
        const service = value(
          (resourceSpans.resource?.attributes ?? []).find((a) => a.key === 'service.name')?.value ?? {},
        );
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            spans.push({
              service,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? '',
              name: span.name,
              startMs: Number(BigInt(span.startTimeUnixNano) / 1000n) / 1000,
              endMs: Number(BigInt(span.endTimeUnixNano) / 1000n) / 1000,
              attributes: Object.fromEntries((span.attributes ?? []).map((a) => [a.key, value(a.value)])),
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, spans, url: `http://127.0.0.1:${server.address().port}` }),
    ),
  );
}

/** An OpenAI-compatible upstream that streams eight words, 15 ms apart. */
function startUpstream() {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', async () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const words = 'A trace follows one request across every process'.split(' ');
      for (const [i, word] of words.entries()) {
        await sleep(15);
        const chunk = {
          id: 'chatcmpl-trace',
          object: 'chat.completion.chunk',
          created: Math.floor(Date.now() / 1000),
          model: 'upstream-model',
          choices: [{ index: 0, delta: { content: (i ? ' ' : '') + word }, finish_reason: null }],
        };
        res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      }
      const last = {
        id: 'chatcmpl-trace',
        object: 'chat.completion.chunk',
        created: Math.floor(Date.now() / 1000),
        model: 'upstream-model',
        choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
        usage: { prompt_tokens: 12, completion_tokens: words.length, total_tokens: 12 + words.length },
      };
      res.end(`data: ${JSON.stringify(last)}\n\ndata: [DONE]\n\n`);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${server.address().port}/v1` }),
    ),
  );
}

const escape = (text) =>
  String(text).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

/** The spans of one trace as a waterfall: each under its parent, a bar on the trace's time axis. */
function waterfall(spans) {
  const children = new Map();
  for (const span of spans) {
    const list = children.get(span.parentSpanId) ?? [];
    list.push(span);
    children.set(span.parentSpanId, list);
  }
  const ids = new Set(spans.map((s) => s.spanId));
  const rows = [];
  const visit = (span, depth) => {
    rows.push({ span, depth });
    for (const child of (children.get(span.spanId) ?? []).sort((a, b) => a.startMs - b.startMs))
      visit(child, depth + 1);
  };
  for (const top of spans.filter((s) => !ids.has(s.parentSpanId)).sort((a, b) => a.startMs - b.startMs))
    visit(top, 0);
  const start = Math.min(...spans.map((s) => s.startMs));
  const total = Math.max(...spans.map((s) => s.endMs)) - start;
  const colours = { 'mgw-gateway': '#4c78a8', 'mgw-chat-worker': '#f58518', 'mgw-registry': '#54a24b' };
  const shown = [
    'gen_ai.request.model',
    'gen_ai.usage.input_tokens',
    'gen_ai.usage.output_tokens',
    'http.response.status_code',
    'mgw.job.outcome',
    'server.address',
  ];
  const body = rows
    .map(({ span, depth }) => {
      const left = ((span.startMs - start) / total) * 100;
      const width = Math.max(0.4, ((span.endMs - span.startMs) / total) * 100);
      const attrs = shown
        .filter((key) => span.attributes[key] !== undefined)
        .map((key) => `${key.replace(/^gen_ai\.|^mgw\./, '')}=${escape(span.attributes[key])}`)
        .join(' · ');
      const colour = colours[span.service] ?? '#888';
      return `<tr><td class="svc" style="color:${colour}">${escape(span.service)}</td>
        <td class="name" style="padding-left:${8 + depth * 16}px">${escape(span.name)}<div class="attrs">${attrs}</div></td>
        <td class="bar"><div style="margin-left:${left}%;width:${width}%;background:${colour}"></div></td>
        <td class="ms">${(span.endMs - span.startMs).toFixed(1)} ms</td></tr>`;
    })
    .join('\n');
  return `<!doctype html><meta charset="utf-8"><style>
    body { font: 13px system-ui, sans-serif; margin: 16px; color: #222; }
    h1 { font-size: 15px; margin: 0 0 10px; } table { border-collapse: collapse; width: 100%; }
    td { border-bottom: 1px solid #eee; padding: 4px 8px; vertical-align: top; }
    .svc { white-space: nowrap; font-weight: 600; } .name { width: 38%; } .ms { text-align: right; white-space: nowrap; }
    .attrs { color: #777; font-size: 11px; } .bar { width: 42%; } .bar div { height: 12px; border-radius: 2px; margin-top: 3px; }
  </style><h1>Trace ${escape(spans[0].traceId)} — one streamed chat completion, ${rows.length} spans, ${total.toFixed(1)} ms</h1>
  <table>${body}</table>`;
}

const receiver = await startReceiver();
const upstream = await startUpstream();
const stack = await BenchStack.start(root, {
  catalog: {
    models: [
      {
        id: 'traced-chat',
        type: 'chat',
        owned_by: 'docs',
        backend: {
          kind: 'openai',
          baseUrl: upstream.url,
          upstreamModel: 'upstream-model',
          maxConcurrency: 4,
          maxConnections: 4,
        },
      },
    ],
  },
  env: {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '200',
  },
});
try {
  // A first request warms the processes (connections, lazy set-up): the one drawn is a request as they come.
  const ask = () =>
    fetch(`${stack.gatewayUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: stack.headers(),
      body: JSON.stringify({
        model: 'traced-chat',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'What does a trace show?' }],
      }),
    }).then((res) => res.text());
  await ask();
  // Within the registry cache's second (REGISTRY_CACHE_MS), as most requests are.
  await sleep(300);
  receiver.spans.length = 0;
  await ask();
  // Every process exports its spans in batches: wait until the trace stops growing.
  let traceId = null;
  let count = -1;
  for (let i = 0; i < 50; i++) {
    await sleep(200);
    traceId ??=
      receiver.spans.find((s) => s.service === 'mgw-gateway' && !s.parentSpanId && s.name.startsWith('POST'))
        ?.traceId ?? null;
    const now = receiver.spans.filter((s) => s.traceId === traceId).length;
    if (traceId !== null && now === count && now > 3) break;
    count = now;
  }
  const spans = receiver.spans.filter((s) => s.traceId === traceId);
  if (spans.length === 0) throw new Error('no trace received: is the build current (npm run build)?');
  const html = waterfall(spans);
  await writeFile(join(root, 'test', 'artifacts', 'trace.html'), html).catch(() => undefined);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 200 }, deviceScaleFactor: 1 });
    await page.setContent(html);
    await page.screenshot({ path: out, fullPage: true });
  } finally {
    await browser.close();
  }
  console.log(`${spans.length} spans of trace ${traceId} → ${out}`);
} finally {
  await stack.stop();
  receiver.server.close();
  upstream.server.close();
}
