// What stored completions cost against a real Redis (wall time, loopback round trips included): storing one
// completion (the one Lua script a `store: true` request adds), then on a key holding N of them a list page,
// a page deep in the index, a metadata filter that matches nothing (the worst case: the whole index read),
// a retrieve and a messages page. Needs Redis at REDIS_URL (default redis://127.0.0.1:6379).
//   node bench/stored-completions.micro.mjs [dist] [N=10000]
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';

const distDir = resolve(process.argv[2] ?? 'dist');
const count = Number(process.argv[3] ?? 10_000);
const require = createRequire(import.meta.url);
require('reflect-metadata');
const { Redis } = require('ioredis');
const { Logger } = require('@nestjs/common');
const { StoredCompletionStore } = require(
  join(distDir, 'libs/stored-completions/src/stored-completion.store.js'),
);
const { toStoreMessages } = require(join(distDir, 'libs/stored-completions/src/store-message.mapper.js'));

Logger.overrideLogger(false);
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const namespace = `bench-stored-${randomBytes(4).toString('hex')}`;
const keyId = `key_${randomBytes(12).toString('hex')}`;
const store = new StoredCompletionStore(
  { commands: redis },
  {
    namespace,
    storeRetentionMs: 3_600_000,
    storeMaxPerKey: count,
  },
);

function entry(i) {
  const id = `chatcmpl-${randomBytes(16).toString('hex')}`;
  const text = 'A short answer of a few words, as a chat model gives. '.repeat(4);
  return {
    id,
    model: i % 2 === 0 ? 'sim-chat' : 'sim-chat-words',
    createdMs: Date.now() + i,
    metadata: { team: i % 3 === 0 ? 'search' : 'ranking', run: String(i) },
    completion: {
      id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: 'sim-chat',
      system_fingerprint: 'fp_0123456789',
      choices: [
        { index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: 'stop' },
      ],
      usage: { prompt_tokens: 40, completion_tokens: 48, total_tokens: 88 },
    },
    messages: toStoreMessages(id, [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: 'Tell me something about stored completions, please.' },
    ]),
  };
}

async function time(label, rounds, body) {
  await body(); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) await body();
  const ms = Number(process.hrtime.bigint() - start) / 1e6 / rounds;
  console.log(`${label.padEnd(58)} ${ms.toFixed(3)} ms`);
}

try {
  const entries = Array.from({ length: count }, (_, i) => entry(i));
  const start = process.hrtime.bigint();
  // Sequential, as one request stores one completion: the latency a `store: true` request adds at its end.
  for (const e of entries) await store.save(keyId, e);
  const perSave = Number(process.hrtime.bigint() - start) / 1e6 / count;
  console.log(`${`save one completion (${count} in a row)`.padEnd(58)} ${perSave.toFixed(3)} ms`);
  const middle = entries[Math.floor(count / 2)].id;
  await time('list page, limit 20', 200, () => store.page(keyId, { limit: 20, order: 'desc' }));
  await time('list page, limit 100, after an id halfway', 100, () =>
    store.page(keyId, { limit: 100, order: 'asc', after: middle }),
  );
  await time('list page, limit 20, model filter', 200, () =>
    store.page(keyId, { limit: 20, order: 'asc', model: 'sim-chat-words' }),
  );
  await time('list page, limit 20, metadata filter matching 1 in 3', 100, () =>
    store.page(keyId, { limit: 20, order: 'asc', metadata: { team: 'search' } }),
  );
  await time(`list page, metadata filter matching none (reads all ${count})`, 10, () =>
    store.page(keyId, { limit: 20, order: 'asc', metadata: { team: 'nobody' } }),
  );
  await time('retrieve', 500, () => store.get(keyId, middle));
  await time('messages page', 500, () => store.messages(keyId, middle, { limit: 20, order: 'asc' }));
  await time('save one more (evicts the oldest)', 200, () => store.save(keyId, entry(count)));
  console.log(
    `redis memory per stored completion ≈ ${await bytesPer(middle)} bytes (MEMORY USAGE of its keys)`,
  );
} finally {
  const keys = await redis.keys(`${namespace}:*`);
  for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000));
  await redis.quit();
}

async function bytesPer(id) {
  const base = `${namespace}:stored:{${keyId}}:c:${id}`;
  return (await redis.memory('USAGE', base)) + (await redis.memory('USAGE', `${base}:messages`));
}
