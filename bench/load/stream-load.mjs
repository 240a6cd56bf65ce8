// Streaming load (S3, S4, S5, R4, M4): an undici client that timestamps the first delta, every delta and the
// end (`[DONE]`, `response.completed` or `message_stop`) of each SSE stream, and checks that every stream carried exactly the expected text, in order.
// Modes: `once` opens `streams` streams together and waits for them (optionally holding them open for
// `holdMs` once all are flowing, then cutting them: S5); `loop` keeps `concurrency` streams going for a
// duration (S4). Input: one JSON argument; output: progress events and a result, as JSON lines.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { histogram, summary } from './histogram.mjs';

// Node globals that the lint config does not declare for .mjs files.
const { AbortController } = globalThis;
const options = JSON.parse(process.argv[2]);
const emit = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const dispatcher = new Agent({
  connections: null,
  pipelining: 1,
  keepAliveTimeout: 60_000,
  headersTimeout: 0,
  bodyTimeout: 0,
  connectTimeout: 60_000,
});
const us = (ms) => Math.max(1, Math.round(ms * 1000));

class Stats {
  ttft = histogram();
  gaps = histogram();
  total = histogram();
  streams = 0;
  complete = 0;
  errors = 0;
  /** Streams whose text was not exactly the expected one (a lost, duplicated or reordered delta). */
  corrupted = 0;
  deltas = 0;
  /** Network reads that carried more than one delta: the relay coalesced or buffered. */
  coalescedReads = 0;
  firstError = null;
  withoutDelta = 0;

  corrupt(text) {
    this.corrupted++;
    this.firstCorrupted ??= text.slice(0, 300);
  }

  fail(error) {
    this.errors++;
    this.firstError ??= String(error?.message ?? error);
  }
}

let stats = new Stats();

/** The end of a stream: chat's `[DONE]`, a Responses `response.completed`, a Messages `message_stop`. */
const STOP = Symbol('stop');

/** A delta's text: a chat chunk's `delta.content`, a Responses `output_text` delta, a Messages `text_delta`. */
function contentOf(name, event) {
  switch (name) {
    case null:
      return event.choices?.[0]?.delta?.content;
    case 'response.completed':
    case 'message_stop':
      return STOP;
    case 'response.output_text.delta':
      return event.delta;
    case 'content_block_delta':
      return event.delta?.text;
    default:
      return undefined;
  }
}

/** One stream. `abort` cuts it (S5); a cut stream only has to have been a correct prefix so far. */
async function stream(signal, onFirstDelta) {
  const s = stats;
  s.streams++;
  const started = performance.now();
  let text = '';
  let deltas = 0;
  let last = 0;
  let done = false;
  try {
    const res = await request(options.url, {
      method: 'POST',
      headers: options.headers,
      body: options.body,
      dispatcher,
      signal,
    });
    if (res.statusCode !== 200) {
      s.fail(`status ${res.statusCode}: ${(await res.body.text()).slice(0, 200)}`);
      return;
    }
    let buffer = '';
    for await (const chunk of res.body) {
      const now = performance.now();
      buffer += chunk.toString();
      let end;
      let inRead = 0;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        let event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        // A chat stream's events carry their id first (`id: n`, for a resume); a Responses or Messages
        // stream's, their name (`event: response.output_text.delta`, `event: content_block_delta`) too.
        let name = null;
        while (event.startsWith('id: ') || event.startsWith('event: ')) {
          if (event.startsWith('event: ')) name = event.slice(7, event.indexOf('\n'));
          event = event.slice(event.indexOf('\n') + 1);
        }
        if (!event.startsWith('data: ')) continue; // keep-alive comments
        const data = event.slice(6);
        const content = data === '[DONE]' ? STOP : contentOf(name, JSON.parse(data));
        if (content === STOP) {
          done = true;
          s.total.recordValue(us(now - started));
          continue;
        }
        if (typeof content !== 'string') continue; // the final chunk, or an error
        text += content;
        deltas++;
        s.deltas++;
        inRead++;
        if (deltas === 1) {
          s.ttft.recordValue(us(now - started));
          onFirstDelta?.();
        } else s.gaps.recordValue(us(now - last));
        last = now;
      }
      if (inRead > 1) s.coalescedReads++;
    }
  } catch (error) {
    if (!signal?.aborted) s.fail(error);
  }
  if (deltas === 0) s.withoutDelta++;
  if (signal?.aborted) {
    if (!options.expectText.startsWith(text)) s.corrupt(text);
    return;
  }
  if (!done) s.fail('stream ended without [DONE] (or response.completed)');
  else if (text !== options.expectText || deltas !== options.expectDeltas) s.corrupt(text);
  else s.complete++;
}

function result(seconds) {
  return {
    event: 'result',
    streams: stats.streams,
    complete: stats.complete,
    errors: stats.errors,
    corrupted: stats.corrupted,
    firstError: stats.firstError,
    firstCorrupted: stats.firstCorrupted ?? null,
    deltas: stats.deltas,
    deltasPerSecond: stats.deltas / seconds,
    coalescedReads: stats.coalescedReads,
    ttftMs: summary(stats.ttft),
    gapMs: summary(stats.gaps),
    totalMs: summary(stats.total),
  };
}

async function loop(seconds) {
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (performance.now() < end) await stream(undefined);
    }),
  );
}

if (options.mode === 'loop') {
  if (options.warmupSeconds > 0) await loop(options.warmupSeconds);
  stats = new Stats();
  emit({ event: 'measuring' });
  const started = performance.now();
  await loop(options.durationSeconds);
  emit({ event: 'measured' });
  emit(result((performance.now() - started) / 1000));
} else {
  if (options.warmupStreams > 0) {
    await Promise.all(Array.from({ length: options.warmupStreams }, () => stream(undefined)));
    stats = new Stats();
  }
  emit({ event: 'measuring' });
  const controller = new AbortController();
  let flowing = 0;
  let allFlowing;
  const everyoneFlows = new Promise((resolve) => (allFlowing = resolve));
  const onFirstDelta = () => {
    if (++flowing === options.streams) allFlowing();
  };
  const started = performance.now();
  const running = [];
  // Opened in batches, each once the previous one is flowing, so 10,000 streams do not overrun the
  // listen backlog in one burst (that measures SYN retries, not the gateway).
  const batch = options.openBatch ?? options.streams;
  for (let opened = 0; opened < options.streams; opened += batch) {
    const target = Math.min(options.streams, opened + batch);
    for (let i = opened; i < target; i++)
      running.push(stream(options.holdMs ? controller.signal : undefined, onFirstDelta));
    while (flowing + stats.errors + stats.withoutDelta < target) await sleep(5);
  }
  if (options.holdMs) {
    await Promise.race([everyoneFlows, Promise.all(running)]);
    const deltasAtOpen = stats.deltas;
    emit({ event: 'all-open', open: flowing, seconds: (performance.now() - started) / 1000 });
    await sleep(options.holdMs);
    const held = stats.deltas - deltasAtOpen;
    emit({ event: 'held', deltasWhileHeld: held });
    controller.abort(new Error('benchmark over'));
    await Promise.all(running);
    emit({ event: 'measured' });
    emit({ ...result((performance.now() - started) / 1000), open: flowing, deltasWhileHeld: held });
  } else {
    await Promise.all(running);
    emit({ event: 'measured' });
    emit(result((performance.now() - started) / 1000));
  }
}
await dispatcher.close();
