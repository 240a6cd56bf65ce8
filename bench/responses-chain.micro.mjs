// What a `previous_response_id` chain costs per turn against a real Redis (wall time, loopback round trip
// included), beside what the same turn costs when the client sends the whole history by hand: for turn t
// of a conversation, the gateway either reads the stored history (one Lua script that checks the turns back
// are all stored and returns the conversation's log, then one parse and a shape check) or parses and validates
// a body that carries the t earlier turns. A stored history is read cold (a gateway that never read this
// conversation: the whole log) and warm (the gateway read the turn before, as a conversation served by one
// gateway does: only the new turn's bytes). A body sent by hand also crosses the network once: the third
// column adds that, as the same bytes echoed by Redis over the same loopback. Prints turns 1, 10, 25 and 50,
// and the bytes a turn adds to Redis. Needs Redis at REDIS_URL (default redis://127.0.0.1:6379).
//   node bench/responses-chain.micro.mjs [dist] [turns=50]
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';

const distDir = resolve(process.argv[2] ?? 'dist');
const turns = Number(process.argv[3] ?? 50);
const require = createRequire(import.meta.url);
require('reflect-metadata');
const { Redis } = require('ioredis');
const { Logger } = require('@nestjs/common');
const { ResponseStore } = require(join(distDir, 'libs/responses-api/src/stored/response.store.js'));
const { validateResponsesRequest, UNSTORED_ECHO } = require(join(distDir, 'libs/responses-api/src/index.js'));

Logger.overrideLogger(false);
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const namespace = `bench-responses-${randomBytes(4).toString('hex')}`;
const keyId = `key_${randomBytes(12).toString('hex')}`;
const config = { namespace, storeRetentionMs: 3_600_000, storeMaxPerKey: 10_000 };
const newStore = () => new ResponseStore({ commands: redis }, config);
const store = newStore();
const QUESTION =
  'A question of about twenty words, as a user asks one in a conversation that goes on and on.';
const ANSWER = 'An answer of a few sentences, as a chat model gives one. '.repeat(6);

function turn(t, previous) {
  const requestId = `bench${t}${randomBytes(8).toString('hex')}`;
  const id = `resp_${requestId}`;
  const input = [{ type: 'message', id: `msg_${requestId}_i0`, role: 'user', content: `${QUESTION} (${t})` }];
  const response = {
    ...UNSTORED_ECHO,
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'completed',
    completed_at: null,
    error: null,
    incomplete_details: null,
    model: 'sim-chat',
    previous_response_id: previous,
    output: [
      {
        type: 'message',
        id: `msg_${requestId}_0`,
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: ANSWER, annotations: [], logprobs: [] }],
      },
    ],
    usage: null,
  };
  return { id, createdMs: Date.now(), model: 'sim-chat', previousId: previous, input, response };
}

/** Mean ms of `measured`, each round after its own untimed `setup`. */
async function timedAfter(rounds, setup, measured) {
  let total = 0n;
  for (let i = 0; i <= rounds; i++) {
    const state = await setup();
    const start = process.hrtime.bigint();
    await measured(state);
    if (i > 0) total += process.hrtime.bigint() - start;
  }
  return Number(total) / 1e6 / rounds;
}

async function timed(rounds, body) {
  await body();
  const start = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) await body();
  return Number(process.hrtime.bigint() - start) / 1e6 / rounds;
}

const ids = [];
const byHand = [];
let before = Number((await redis.info('memory')).match(/used_memory:(\d+)/)[1]);
let previous = null;
for (let t = 1; t <= turns; t++) {
  const entry = turn(t, previous);
  await store.save(keyId, entry);
  ids.push(entry.id);
  previous = entry.id;
}
const after = Number((await redis.info('memory')).match(/used_memory:(\d+)/)[1]);

console.log(
  `turn | previous_response_id cold (ms) | warm (ms) | history by hand (ms) | by hand + its bytes over loopback (ms) | by-hand body (KiB)`,
);
for (const t of [1, 10, 25, turns]) {
  const last = ids[t - 1];
  const chained = await timedAfter(200, newStore, (cold) => cold.chain(keyId, last));
  // Warm: this gateway read the turn before, and saving this one started it from there (what `save` does).
  const warm =
    t === 1
      ? chained
      : await timedAfter(
          200,
          async () => {
            const reader = newStore();
            await reader.chain(keyId, ids[t - 2]);
            reader.logs.inherit(last, ids[t - 2]);
            return reader;
          },
          (reader) => reader.chain(keyId, last),
        );
  const chain = await store.chain(keyId, last);
  const items = [...chain.items, { type: 'message', role: 'user', content: QUESTION }];
  const body = JSON.stringify({ model: 'sim-chat', input: items });
  byHand.push(body.length);
  const handMs = await timed(200, async () => validateResponsesRequest(JSON.parse(body)));
  const carriedMs = await timed(200, async () =>
    validateResponsesRequest(JSON.parse(await redis.echo(body))),
  );
  console.log(
    `${String(t).padStart(4)} | ${chained.toFixed(3).padStart(30)} | ${warm.toFixed(3).padStart(9)} | ${handMs.toFixed(3).padStart(20)} | ${carriedMs.toFixed(3).padStart(38)} | ${(body.length / 1024).toFixed(1).padStart(18)}`,
  );
}
console.log(`Redis memory per stored turn: ~${Math.round((after - before) / turns)} bytes`);
const keys = await redis.keys(`${namespace}:*`);
if (keys.length > 0) await redis.del(...keys);
await redis.quit();
