// A scripted vLLM-like OpenAI-compatible server, for tests and benches of prefix-aware routing: N upstreams
// in one process, each on its own port, each with
//   - a fixed number of slots (`--slots`): requests beyond them wait in the engine, as vLLM's do;
//   - a prefix cache of its own, at message boundaries: a request's prefill costs `--prefill-us` µs per token
//     not already cached (tokens ≈ characters / 4), then `--tokens` output tokens at `--decode-ms` each;
//     after it, every prefix of its prompt and the prompt plus its answer are cached (LRU, `--cache-tokens`);
//   - `GET /metrics` with vLLM's names: vllm:num_requests_running, vllm:num_requests_waiting (its own waiting
//     plus a settable count of outside traffic), vllm:kv_cache_usage_perc, vllm:prefix_cache_{queries,hits}_total;
//   - control: `POST /_outside {"waiting": n}` sets the outside waiting count, `GET /_log` lists what it served
//     (per request: the first user message's first 64 characters, prompt and cached tokens, whether the whole
//     history before the last message was cached), `POST /_reset` clears the log (and with {"cache": true}
//     the cache).
// Prints one JSON line on stdout once listening: {"ports": [..]}. Runs until SIGTERM.
//   node test/support/vllm-like-upstream.mjs [--upstreams 4] [--slots 4] [--prefill-us 50] [--tokens 16]
//     [--decode-ms 8] [--cache-tokens 4000000] [--model vllm-model]
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { commandLineOptions } from '../../bench/lib/options.mjs';

const args = commandLineOptions();
const UPSTREAMS = Number(args.upstreams ?? 4);
const SLOTS = Number(args.slots ?? 4);
const PREFILL_US = Number(args['prefill-us'] ?? 50);
const TOKENS = Number(args.tokens ?? 16);
const DECODE_MS = Number(args['decode-ms'] ?? 8);
const CACHE_TOKENS = Number(args['cache-tokens'] ?? 4_000_000);
const MODEL = String(args.model ?? 'vllm-model');

const tokensOf = (text) => Math.ceil(text.length / 4);
const textOf = (content) =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((part) => (part.type === 'text' ? part.text : '')).join('')
      : '';

class Engine {
  running = 0;
  waitingOwn = 0;
  outsideWaiting = 0;
  queue = [];
  /** prefix hash → its length in tokens, in LRU order. */
  cache = new Map();
  cachedTokens = 0;
  queries = 0;
  hits = 0;
  log = [];

  constructor(index) {
    this.index = index;
  }

  async slot() {
    if (this.running < SLOTS) {
      this.running++;
      return;
    }
    this.waitingOwn++;
    await new Promise((resolve) => this.queue.push(resolve));
    this.waitingOwn--;
  }

  free() {
    const next = this.queue.shift();
    if (next) next();
    else this.running--;
  }

  /** Cumulative hashes and token counts of the prompt's prefixes at message boundaries. */
  prefixes(messages) {
    const hash = createHash('sha256');
    const out = [];
    let tokens = 0;
    for (const message of messages) {
      const text = textOf(message.content);
      hash.update(`\u0001${message.role}\u0000${text}`);
      tokens += tokensOf(text) + 4;
      out.push({ key: hash.copy().digest('hex'), tokens });
    }
    return out;
  }

  lookup(prefixes) {
    let cached = 0;
    for (const { key, tokens } of prefixes) {
      if (!this.cache.has(key)) break;
      this.cache.delete(key);
      this.cache.set(key, tokens);
      cached = tokens;
    }
    return cached;
  }

  remember(prefixes) {
    for (const { key, tokens } of prefixes) {
      if (this.cache.has(key)) this.cache.delete(key);
      else this.cachedTokens += tokens;
      this.cache.set(key, tokens);
    }
    while (this.cachedTokens > CACHE_TOKENS && this.cache.size > 0) {
      const [oldest, tokens] = this.cache.entries().next().value;
      this.cache.delete(oldest);
      this.cachedTokens -= tokens;
    }
  }

  metrics() {
    const labels = `{model_name="${MODEL}"}`;
    return [
      '# TYPE vllm:num_requests_running gauge',
      `vllm:num_requests_running${labels} ${this.running}`,
      '# TYPE vllm:num_requests_waiting gauge',
      `vllm:num_requests_waiting${labels} ${this.waitingOwn + this.outsideWaiting}`,
      '# TYPE vllm:kv_cache_usage_perc gauge',
      `vllm:kv_cache_usage_perc${labels} ${Math.min(1, this.cachedTokens / CACHE_TOKENS)}`,
      '# TYPE vllm:prefix_cache_queries_total counter',
      `vllm:prefix_cache_queries_total${labels} ${this.queries}`,
      '# TYPE vllm:prefix_cache_hits_total counter',
      `vllm:prefix_cache_hits_total${labels} ${this.hits}`,
      '',
    ].join('\n');
  }

  async chat(body, res) {
    const messages = body.messages ?? [];
    const prefixes = this.prefixes(messages);
    const promptTokens = prefixes.at(-1)?.tokens ?? 0;
    const history = prefixes.at(-2)?.tokens ?? 0;
    const firstUser = textOf(messages.find((m) => m.role === 'user')?.content ?? '').slice(0, 64);
    await this.slot();
    try {
      // Looked up once the request runs: what an earlier request cached meanwhile counts, as in vLLM.
      const cached = this.lookup(prefixes);
      this.queries += promptTokens;
      this.hits += cached;
      this.log.push({
        firstUser,
        messages: messages.length,
        promptTokens,
        cachedTokens: cached,
        historyCached: messages.length > 1 && cached >= history,
      });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      await sleep(((promptTokens - cached) * PREFILL_US) / 1000);
      const id = `chatcmpl-${this.index}-${this.log.length}`;
      const words = [];
      for (let i = 0; i < TOKENS; i++) {
        await sleep(DECODE_MS);
        if (res.destroyed) return;
        const word = `u${this.index}t${messages.length}w${i} `;
        words.push(word);
        res.write(`data: ${JSON.stringify(chunk(id, { content: word }, null))}\n\n`);
      }
      res.write(`data: ${JSON.stringify(chunk(id, {}, 'stop'))}\n\n`);
      res.write(
        `data: ${JSON.stringify({ ...chunk(id, {}, null), choices: [], usage: { prompt_tokens: promptTokens, completion_tokens: TOKENS, total_tokens: promptTokens + TOKENS } })}\n\n`,
      );
      res.end('data: [DONE]\n\n');
      this.remember(this.prefixes([...messages, { role: 'assistant', content: words.join('') }]));
    } finally {
      this.free();
    }
  }
}

function chunk(id, delta, finish) {
  return {
    id,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: MODEL,
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}

async function readBody(req) {
  const chunks = [];
  for await (const piece of req) chunks.push(piece);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? {} : JSON.parse(text);
}

function json(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function handle(engine, req, res) {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method === 'GET' && path === '/v1/models') {
    return json(res, 200, { object: 'list', data: [{ id: MODEL, object: 'model' }] });
  }
  if (req.method === 'GET' && path === '/metrics') {
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    return res.end(engine.metrics());
  }
  if (req.method === 'GET' && path === '/_log') return json(res, 200, engine.log);
  if (req.method === 'POST' && path === '/_outside') {
    engine.outsideWaiting = Number((await readBody(req)).waiting ?? 0);
    return json(res, 200, { waiting: engine.outsideWaiting });
  }
  if (req.method === 'POST' && path === '/_reset') {
    const body = await readBody(req);
    engine.log = [];
    if (body.cache === true) {
      engine.cache.clear();
      engine.cachedTokens = 0;
    }
    return json(res, 200, {});
  }
  if (req.method === 'POST' && path === '/v1/chat/completions') return engine.chat(await readBody(req), res);
  return json(res, 404, {
    error: { message: `no route ${req.method} ${path}`, type: 'invalid_request_error' },
  });
}

const servers = [];
for (let i = 0; i < UPSTREAMS; i++) {
  const engine = new Engine(i);
  const server = createServer((req, res) => {
    handle(engine, req, res).catch((error) => {
      if (!res.headersSent) json(res, 500, { error: { message: String(error), type: 'server_error' } });
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
}
process.stdout.write(`${JSON.stringify({ ports: servers.map((server) => server.address().port) })}\n`);
process.on('SIGTERM', () => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
  process.exit(0);
});
