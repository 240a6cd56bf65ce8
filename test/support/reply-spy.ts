import { Redis } from 'ioredis';
import { parseReplyFrame } from '@mgw/contracts';

export interface SpiedMessage {
  kind: string;
  seq: number;
  at: number;
}

/** Watches every reply channel of a namespace, to see what workers publish for a request after the fact. */
export class ReplySpy {
  private readonly byRequest = new Map<string, SpiedMessage[]>();
  private readonly redis: Redis;

  private constructor(redisUrl: string) {
    this.redis = new Redis(redisUrl, { lazyConnect: true });
  }

  static async start(redisUrl: string, namespace: string): Promise<ReplySpy> {
    const spy = new ReplySpy(redisUrl);
    await spy.redis.connect();
    spy.redis.on('pmessage', (_pattern: string, _channel: string, raw: string) => {
      for (const message of parseReplyFrame(raw) as { requestId: string; kind: string; seq: number }[]) {
        const list = spy.byRequest.get(message.requestId) ?? [];
        list.push({ kind: message.kind, seq: message.seq, at: Date.now() });
        spy.byRequest.set(message.requestId, list);
      }
    });
    await spy.redis.psubscribe(`${namespace}:reply:*`);
    return spy;
  }

  messages(requestId: string): SpiedMessage[] {
    return this.byRequest.get(requestId) ?? [];
  }

  async close(): Promise<void> {
    await this.redis.quit();
  }
}
