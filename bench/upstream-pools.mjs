// Upstream pools (issue 15): three fake OpenAI-compatible upstreams (real HTTP servers in a process of their
// own, bench/lib/fake-upstreams.process.mjs, of different speeds, maxConcurrency 4, 8 and 2) behind one catalog model, served by two chat-worker processes
// and one gateway on a private Redis, under a closed loop of 64 streaming clients. Prints per-upstream
// in-flight maximum against its limit, throughput against the sum of the upstreams' capacities, and what
// happens when one upstream is killed under load and revived; then a model whose upstreams are all dead,
// with that pool as its fallback. See bench/README.md.
//   npm run build && node bench/upstream-pools.mjs [--steady <s>] [--fallback <s>] [--concurrency <n>]
//     [--service <ms,ms,ms>] [--out <file>]
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { FakeUpstreams } from './lib/fake-upstreams.process.mjs';
import { Child, freePort, startRedis } from './lib/processes.mjs';
import { distDir } from './lib/stack.mjs';
import { commandLineOptions } from './lib/options.mjs';

const { fetch, AbortSignal } = globalThis;
const root = join(import.meta.dirname, '..');
const args = commandLineOptions();
const STEADY_S = Number(args.steady ?? 20);
const FALLBACK_S = Number(args.fallback ?? 10);
const CONCURRENCY = Number(args.concurrency ?? 64);
const TOKENS = 10;
/**
 * Nominal service times of the three upstreams, ms (`--service 50,100,200`: shorter answers, where the
 * hand-over of a freed slot weighs more).
 */
const SERVICE_MS = String(args.service ?? '200,400,800')
  .split(',')
  .map(Number);
/** name, maxConcurrency, ms between two tokens. */
const UPSTREAMS = [
  { name: 'fast', maxConcurrency: 4, tokenMs: SERVICE_MS[0] / TOKENS },
  { name: 'medium', maxConcurrency: 8, tokenMs: SERVICE_MS[1] / TOKENS },
  { name: 'slow', maxConcurrency: 2, tokenMs: SERVICE_MS[2] / TOKENS },
];
const KILLED = 'medium';

const dispatcher = new Agent({
  connections: null,
  keepAliveTimeout: 60_000,
  headersTimeout: 0,
  bodyTimeout: 0,
});

/** One streaming request; resolves with what the client saw. */
async function stream(gateway, apiKey, model = 'pool-chat') {
  const result = {
    model: null,
    servedHeader: null,
    startedAt: Date.now(),
    firstTokenAt: null,
    endedAt: null,
    upstream: null,
    ok: false,
    error: null,
  };
  try {
    const { statusCode, headers, body } = await request(`${gateway}/v1/chat/completions`, {
      method: 'POST',
      dispatcher,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    result.servedHeader = headers['x-served-model'] ?? null;
    if (statusCode !== 200) {
      result.error = `HTTP ${statusCode}: ${(await body.text()).slice(0, 200)}`;
      return result;
    }
    let buffer = '';
    for await (const chunk of body) {
      buffer += chunk.toString();
      let end;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        // An event is `id: <n>` then `data: …` (resumable streams); keep-alives are comments.
        const line = event.split('\n').find((l) => l.startsWith('data: '));
        if (line === undefined) continue;
        const data = line.slice(6);
        if (data === '[DONE]') {
          result.ok = result.error === null;
          continue;
        }
        const parsed = JSON.parse(data);
        if (parsed.error) result.error = parsed.error.message;
        result.model ??= parsed.model ?? null;
        const content = parsed.choices?.[0]?.delta?.content;
        if (content) {
          result.firstTokenAt ??= Date.now();
          result.upstream ??= /^[a-z]+/.exec(content)[0];
        }
      }
    }
  } catch (error) {
    result.error = String(error);
  } finally {
    result.endedAt = Date.now();
  }
  return result;
}

async function scrapeUp(port, upstream) {
  try {
    const text = await (
      await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(2000) })
    ).text();
    if (process.env.BENCH_DEBUG)
      console.log(text.split('\n').filter((l) => l.startsWith('worker_upstream_up')));
    const match = new RegExp(
      `^worker_upstream_up\\{model="pool-chat",upstream="${upstream}"[^}]*\\} (\\d)`,
      'm',
    ).exec(text);
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

async function main() {
  const upstreams = await FakeUpstreams.start(UPSTREAMS, TOKENS);
  const fakes = UPSTREAMS.map((spec, i) => ({ ...spec, port: upstreams.ports[i] }));
  // Ports nothing listens on: the upstreams of a model that is down from the start.
  const deadPorts = [await freePort(), await freePort()];
  const tempDir = await mkdtemp(join(tmpdir(), 'mgw-bench-pools-'));
  const catalogPath = join(tempDir, 'catalog.json');
  await writeFile(
    catalogPath,
    JSON.stringify({
      models: [
        {
          id: 'pool-chat',
          type: 'chat',
          owned_by: 'bench',
          backend: {
            kind: 'openai',
            upstreamModel: 'bench-llama',
            upstreams: fakes.map((f) => ({
              name: f.name,
              baseUrl: `http://127.0.0.1:${f.port}/v1`,
              maxConcurrency: f.maxConcurrency,
            })),
          },
        },
        {
          id: 'pool-dead',
          type: 'chat',
          owned_by: 'bench',
          fallbacks: ['pool-chat'],
          backend: {
            kind: 'openai',
            upstreamModel: 'bench-llama',
            upstreams: deadPorts.map((port, i) => ({
              name: `dead-${i}`,
              baseUrl: `http://127.0.0.1:${port}/v1`,
              maxConcurrency: 8,
            })),
          },
        },
      ],
    }),
  );
  const redis = await startRedis();
  const gatewayPort = await freePort();
  const metricsPorts = [await freePort(), await freePort()];
  const apiKey = `sk-bench-${randomBytes(16).toString('hex')}`;
  const env = {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'production',
    REDIS_URL: redis.url,
    KEY_PREFIX: 'bench',
    CATALOG_PATH: catalogPath,
    GATEWAY_API_KEYS: apiKey,
    PORT: String(gatewayPort),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    METRICS_PORT: '0',
    DEFAULT_CHAT_MODEL: 'pool-chat',
  };
  const app = (name) => join(root, distDir(), 'apps', name, 'src', 'main.js');
  const children = [
    new Child('registry', process.execPath, [app('registry')], { cwd: root, env }),
    new Child('chat-worker-1', process.execPath, [app('chat-worker')], {
      cwd: root,
      env: { ...env, WORKER_CONCURRENCY: '16', METRICS_PORT: String(metricsPorts[0]) },
    }),
    new Child('chat-worker-2', process.execPath, [app('chat-worker')], {
      cwd: root,
      env: { ...env, WORKER_CONCURRENCY: '16', METRICS_PORT: String(metricsPorts[1]) },
    }),
    new Child('gateway', process.execPath, [app('gateway')], { cwd: root, env }),
  ];
  const gateway = `http://127.0.0.1:${gatewayPort}`;
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      for (const child of children)
        if (!child.running) throw new Error(`${child.label} exited:\n${child.output}`);
      const res = await fetch(`${gateway}/v1/models`, {
        headers: { authorization: `Bearer ${apiKey}` },
      }).catch(() => null);
      if (res?.ok && (await res.text()).includes('pool-chat')) break;
      if (Date.now() > deadline) throw new Error('the stack did not come up');
      await sleep(200);
    }
    await sleep(1500); // both workers registered and fetching

    // The closed loop: CONCURRENCY clients, each sending its next request when the last one ended.
    const results = [];
    let running = true;
    const clients = Array.from({ length: CONCURRENCY }, async () => {
      while (running) results.push(await stream(gateway, apiKey));
    });

    // Phase 1: steady state, after a 3 s warm-up.
    await sleep(3000);
    await upstreams.reset();
    const steadyFrom = Date.now();
    await sleep(STEADY_S * 1000);
    const steadyTo = Date.now();
    const inSteady = await upstreams.stats();
    const servedSteady = inSteady.map((f) => f.served);
    // Slot occupancy: the share of the window each upstream's slots spent answering.
    const occupancy = inSteady.map((f) => f.busyMs / ((steadyTo - steadyFrom) * f.maxConcurrency));
    const steady = results.filter((r) => r.startedAt >= steadyFrom && r.endedAt <= steadyTo);
    const completedInWindow = results.filter(
      (r) => r.ok && r.endedAt > steadyFrom && r.endedAt <= steadyTo,
    ).length;
    const throughput = completedInWindow / ((steadyTo - steadyFrom) / 1000);
    const capacity = inSteady.map((f) => {
      const serviceMs = f.served > 0 ? f.busyMs / f.served : f.tokenMs * TOKENS;
      return { name: f.name, serviceMs, perSecond: (f.maxConcurrency * 1000) / serviceMs };
    });
    const capacitySum = capacity.reduce((sum, c) => sum + c.perSecond, 0);
    const nominalSum = fakes.reduce((sum, f) => sum + (f.maxConcurrency * 1000) / (f.tokenMs * TOKENS), 0);

    // Phase 2: kill one upstream under load.
    const killedAt = Date.now();
    await upstreams.kill(KILLED);
    let outAt = null;
    while (outAt === null && Date.now() - killedAt < 30_000) {
      const states = await Promise.all(metricsPorts.map((port) => scrapeUp(port, KILLED)));
      if (states.every((s) => s === 0)) outAt = Date.now();
      else await sleep(50);
    }
    await sleep(5000);
    const afterKill = results.filter((r) => r.startedAt >= killedAt - 60_000 && r.endedAt >= killedAt);
    const failedBeforeStreaming = afterKill.filter((r) => !r.ok && r.firstTokenAt === null);
    const failedWhileStreaming = afterKill.filter((r) => !r.ok && r.firstTokenAt !== null);
    // Requests that reached the survivors only: the last request any client got from the killed upstream.
    const lastFromKilled = Math.max(
      ...results.filter((r) => r.upstream === KILLED).map((r) => r.firstTokenAt ?? 0),
    );

    // Phase 3: revive it.
    const arrivalsOfKilled = async () => (await upstreams.stats()).find((f) => f.name === KILLED).arrivals;
    const arrivalsBefore = (await arrivalsOfKilled()).length;
    await upstreams.revive(KILLED);
    const revivedAt = Date.now();
    let arrivals = await arrivalsOfKilled();
    while (arrivals.length === arrivalsBefore && Date.now() - revivedAt < 30_000) {
      await sleep(20);
      arrivals = await arrivalsOfKilled();
    }
    const backAt = arrivals.length > arrivalsBefore ? arrivals[arrivalsBefore] : null;
    await sleep(2000);
    running = false;
    await Promise.all(clients);
    const errorsTotal = results.filter((r) => !r.ok).length;

    // Phase 4: every upstream of `pool-dead` is dead and it declares `pool-chat` as its fallback. The first
    // requests find its workers still ready (their jobs fail before output and move on); once the circuits
    // are open the gateway sends the rest to the fallback before queueing them.
    const fallbackResults = [];
    let fallbackRunning = true;
    const fallbackClients = Array.from({ length: CONCURRENCY }, async () => {
      while (fallbackRunning) fallbackResults.push(await stream(gateway, apiKey, 'pool-dead'));
    });
    await sleep(FALLBACK_S * 1000);
    fallbackRunning = false;
    await Promise.all(fallbackClients);
    const namedFallback = fallbackResults.filter(
      (r) => r.ok && r.model === 'pool-chat' && r.servedHeader === 'pool-chat',
    ).length;

    const final = await upstreams.stats();
    const rows = [
      [
        'upstream',
        'maxConcurrency',
        'max in flight seen',
        'served (steady)',
        'mean service ms',
        'capacity req/s',
        'slots busy',
      ],
      ...final.map((f, i) => [
        f.name,
        f.maxConcurrency,
        f.maxInFlight,
        servedSteady[i],
        capacity[i].serviceMs.toFixed(0),
        capacity[i].perSecond.toFixed(1),
        `${(100 * occupancy[i]).toFixed(0)} %`,
      ]),
    ];
    const report = {
      concurrency: CONCURRENCY,
      steadySeconds: STEADY_S,
      steadyRequests: steady.length,
      steadyErrors: steady.filter((r) => !r.ok).length,
      throughput: Number(throughput.toFixed(1)),
      capacitySum: Number(capacitySum.toFixed(1)),
      nominalCapacitySum: Number(nominalSum.toFixed(1)),
      throughputOfCapacity: Number(((100 * throughput) / capacitySum).toFixed(1)),
      overLimit: final.filter((f) => f.maxInFlight > f.maxConcurrency).map((f) => f.name),
      kill: {
        upstream: KILLED,
        circuitOpenInBothWorkersMs: outAt === null ? null : outAt - killedAt,
        lastTokenFromKilledAfterKillMs: lastFromKilled >= killedAt ? lastFromKilled - killedAt : 0,
        errorsBeforeStreaming: failedBeforeStreaming.length,
        errorsWhileStreaming: failedWhileStreaming.length,
        sampleErrors: [...new Set(failedBeforeStreaming.map((r) => r.error))].slice(0, 3),
      },
      revive: { firstRequestAfterMs: backAt === null ? null : backAt - revivedAt },
      fallback: {
        seconds: FALLBACK_S,
        requests: fallbackResults.length,
        errors: fallbackResults.filter((r) => !r.ok).length,
        namingTheFallback: namedFallback,
        sampleErrors: [...new Set(fallbackResults.filter((r) => !r.ok).map((r) => r.error))].slice(0, 3),
      },
      requestsTotal: results.length,
      errorsTotal,
    };
    console.log(rows.map((r) => `| ${r.join(' | ')} |`).join('\n'));
    console.log(JSON.stringify(report, null, 2));
    if (args.out) await writeFile(args.out, JSON.stringify({ rows, report }, null, 2));
  } finally {
    for (const child of children.reverse()) await child.stop();
    await redis.stop();
    await upstreams.stop();
    await rm(tempDir, { recursive: true, force: true });
    await dispatcher.close();
  }
}

await main();
