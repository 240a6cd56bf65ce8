import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { parseReplyFrame, type ReplyMessage } from '@mgw/contracts';
import { waitFor } from '@mgw/testing';
import { ReplyBatcher, type ReplyLog } from './reply.batcher';
import { ReplyStreamWriter } from './reply-stream.writer';

/** Real Redis: a resumable stream's frames reach its replay log before anyone hears them. */
describe('ReplyBatcher with replay logs', () => {
  const namespace = `unit-replylog-${randomBytes(5).toString('hex')}`;
  let publisher: Redis;
  let subscriber: Redis;
  let reader: Redis;
  const heard = new Map<string, ReplyMessage[]>();
  /** For each message heard: how many messages of its stream its log held at that moment. */
  const loggedWhenHeard: { seq: number; logged: number }[] = [];

  const channelA = `${namespace}:reply:a`;
  const channelB = `${namespace}:reply:b`;
  const logOf = (requestId: string): ReplyLog => ({
    key: `${namespace}:stream:${requestId}:log`,
    retentionMs: 60_000,
    maxEntries: 1000,
  });

  async function readLog(key: string): Promise<ReplyMessage[]> {
    const entries = await reader.xrange(key, '-', '+');
    return entries.flatMap(([, fields]) => parseReplyFrame(fields[1]!) as ReplyMessage[]);
  }

  beforeAll(async () => {
    publisher = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
    subscriber = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
    reader = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
    await subscriber.subscribe(channelA, channelB);
    subscriber.on('message', (channel: string, raw: string) => {
      const messages = parseReplyFrame(raw) as ReplyMessage[];
      heard.set(channel, [...(heard.get(channel) ?? []), ...messages]);
      for (const message of messages) {
        if (!message.requestId.startsWith('req')) continue; // the stream without a log
        void readLog(logOf(message.requestId).key).then((log) =>
          loggedWhenHeard.push({ seq: message.seq, logged: log.filter((m) => m.seq <= message.seq).length }),
        );
      }
    });
  });

  afterAll(async () => {
    const keys = await reader.keys(`${namespace}:*`);
    if (keys.length > 0) await reader.del(...keys);
    await Promise.all([publisher.quit(), subscriber.quit(), reader.quit()]);
  });

  it('logs every message of a stream ahead of its publish, with the retention, and follows a redirect in order', async () => {
    const batcher = new ReplyBatcher(publisher);
    const requestId = `req${randomBytes(6).toString('hex')}`;
    const log = logOf(requestId);
    const other = new ReplyStreamWriter(batcher, channelB, `other${randomBytes(6).toString('hex')}`);
    const writer = new ReplyStreamWriter(batcher, channelA, requestId, () => undefined, undefined, log);

    await other.send({ kind: 'started', workerId: 'w2' }); // B's frame of this turn opens first
    await writer.send({ kind: 'started', workerId: 'w1' });
    for (let i = 0; i < 20; i++) {
      // Another stream's frame to B opens first in the same turn: the redirect must not let it overtake A's.
      await other.send({ kind: 'alive' });
      await writer.send({ kind: 'delta', choice: 0, content: `t${i}` });
      if (i === 9) await writer.redirect(channelB);
    }
    await writer.flush();
    await other.flush();

    const logged = await readLog(log.key);
    expect(logged.map((message) => message.seq)).toEqual(Array.from({ length: 23 }, (_, i) => i));
    expect(logged.map((message) => message.kind)).toEqual([
      'started',
      ...Array<string>(10).fill('delta'),
      'moved',
      'alive',
      ...Array<string>(10).fill('delta'),
    ]);
    const ttl = await reader.pttl(log.key);
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);

    await waitFor('every message heard', () => loggedWhenHeard.length === 23);
    // When a message was heard, its log held it and every message before it.
    for (const { seq, logged: count } of loggedWhenHeard) expect(count).toBe(seq + 1);
    const onA = (heard.get(channelA) ?? []).filter((message) => message.requestId === requestId);
    const onB = (heard.get(channelB) ?? []).filter((message) => message.requestId === requestId);
    expect(onA.map((message) => message.seq)).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(onB.map((message) => message.seq)).toEqual(Array.from({ length: 11 }, (_, i) => 12 + i));
    // A stream without a log leaves nothing in Redis.
    expect(await reader.exists(logOf(other.requestId).key)).toBe(0);
  });
});
