import { Inject, Injectable, Logger } from '@nestjs/common';
import { GatewayConfig } from '@mgw/config';
import {
  parseReplyFrame,
  parseReplyRecord,
  ProtocolError,
  streamLogKeyFor,
  streamMetaKeyFor,
  streamRouteKeyFor,
  type ReplyMessage,
} from '@mgw/contracts';
import { type ResumeOptions } from '@mgw/request';
import { RedisConnections } from '@mgw/redis';
import { readStreamMeta, type StreamMeta } from './stream-meta.reader';

/**
 * The gateway's side of the resumable streams kept in Redis (see README "Resumable streams"): per request
 * a meta record (who may resume it, what its chunks say), the replay log its worker appends every reply
 * frame to, and the route a worker reads when it starts a job that was resumed while still queued.
 */
@Injectable()
export class StreamLogStore {
  private readonly logger = new Logger('Resume');

  constructor(
    @Inject(RedisConnections) private readonly redis: RedisConnections,
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
  ) {}

  get enabled(): boolean {
    return this.config.streamRetentionMs > 0;
  }

  /** What a resumable stream's job carries: how its worker keeps the log, and how long it waits for us. */
  resumeOptions(): ResumeOptions {
    return {
      retentionMs: this.config.streamRetentionMs,
      maxEntries: this.config.streamLogMaxEntries,
      graceMs: this.config.resumeGraceMs,
    };
  }

  /** Kept until the job's deadline plus the retention: as long as its log can exist. */
  async open(requestId: string, meta: StreamMeta, now = Date.now()): Promise<void> {
    const ttlMs = Math.max(1, meta.deadline - now) + this.config.streamRetentionMs;
    await this.redis.commands.set(
      streamMetaKeyFor(this.config.namespace, requestId),
      JSON.stringify(meta),
      'PX',
      ttlMs,
    );
  }

  /** The stream's meta, or null when it does not exist (never did, expired, or unreadable). */
  async meta(requestId: string): Promise<StreamMeta | null> {
    const raw = await this.redis.commands.get(streamMetaKeyFor(this.config.namespace, requestId));
    if (raw === null) return null;
    try {
      return readStreamMeta(raw);
    } catch (error) {
      this.logger.warn({ msg: `request ${requestId}: ${(error as Error).message}`, requestId });
      return null;
    }
  }

  /** Names this gateway as where the stream goes (read by a worker that starts the job later). */
  async route(requestId: string, channel: string): Promise<void> {
    await this.redis.commands.set(
      streamRouteKeyFor(this.config.namespace, requestId),
      channel,
      'PX',
      this.config.streamRetentionMs,
    );
  }

  /**
   * Every message of the stream kept so far, in the order its worker sent them. A malformed entry is a
   * `ProtocolError` (the log is as untrusted as the pub/sub messages it copies).
   */
  async read(requestId: string): Promise<ReplyMessage[]> {
    const entries = await this.redis.commands.xrange(
      streamLogKeyFor(this.config.namespace, requestId),
      '-',
      '+',
    );
    try {
      return this.messagesOf(requestId, entries);
    } catch (error) {
      this.logger.warn({ msg: `request ${requestId}: replay log: ${(error as Error).message}`, requestId });
      throw error;
    }
  }

  private messagesOf(requestId: string, entries: [id: string, fields: string[]][]): ReplyMessage[] {
    const messages: ReplyMessage[] = [];
    for (const [, fields] of entries) {
      // The frame is the entry's field `f`; fields a newer worker may add beside it are ignored.
      const at = fields.findIndex((field, i) => i % 2 === 0 && field === 'f');
      const frame = at === -1 ? undefined : fields[at + 1];
      if (frame === undefined) throw new ProtocolError('replay log entry without a frame');
      for (const record of parseReplyFrame(frame)) {
        const message = parseReplyRecord(record);
        if (message.requestId !== requestId) {
          throw new ProtocolError(`replay log of ${requestId} holds a message of ${message.requestId}`);
        }
        messages.push(message);
      }
    }
    return messages;
  }
}
