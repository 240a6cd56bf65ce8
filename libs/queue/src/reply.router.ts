import {
  parseReplyFrame,
  parseReplyRecord,
  peekRequestIds,
  ProtocolError,
  requestIdOfRecord,
  type ReplyMessage,
  type ComponentLogger,
} from '@mgw/contracts';
import type { PubSubDispatcher } from './pubsub.dispatcher';

export interface ReplyHandler {
  /** Messages of this request, in order, each exactly once. */
  onMessage(message: ReplyMessage): void;
  /** The stream broke (gap, duplicate, malformed message): no more messages will be delivered. */
  onProtocolError(error: ProtocolError): void;
  /** The subscription dropped (Redis restarted or the link broke): messages may have been lost meanwhile. */
  onConnectionLost(): void;
}

interface Route {
  handler: ReplyHandler;
  /** Who may unregister the route: the handler, or the request a handler feeds. */
  owner: object;
  /** Null for a resumed stream until its first message here: it joins mid-stream. */
  nextSeq: number | null;
  /** Nothing but `started`/`alive` seen: a restart of the job on another worker is still invisible to the client. */
  noOutput: boolean;
}

/**
 * Demultiplexes this gateway instance's single reply channel to in-flight requests by request id.
 * There is one SUBSCRIBE per process, made at start: nothing on the request path touches subscriptions.
 */
export class ReplyRouter {
  private readonly routes = new Map<string, Route>();

  constructor(
    private readonly pubsub: PubSubDispatcher,
    readonly channel: string,
    private readonly logger: Pick<ComponentLogger, 'warn'>,
  ) {}

  async start(): Promise<void> {
    // Sharded on a Cluster: a reply frame then travels to one node, not to every node of the cluster.
    await this.pubsub.listen(
      this.channel,
      { message: (raw) => this.dispatch(raw), disconnected: () => this.failAll() },
      { sharded: true },
    );
  }

  get isSubscribed(): boolean {
    return this.pubsub.isListening(this.channel);
  }

  get size(): number {
    return this.routes.size;
  }

  register(requestId: string, handler: ReplyHandler): void {
    this.routes.set(requestId, { handler, owner: handler, nextSeq: 0, noOutput: true });
  }

  /**
   * Routes a stream resumed here: its worker redirects the replies to this channel mid-stream, so they start
   * at whatever sequence number came next (`handler` checks them against the replay log).
   */
  registerResumed(requestId: string, handler: ReplyHandler, owner: object): void {
    this.routes.set(requestId, { handler, owner, nextSeq: null, noOutput: false });
  }

  /** With `owner`, only that request's route goes (a resumed request may have replaced it already). */
  unregister(requestId: string, owner?: object): void {
    if (owner !== undefined && this.routes.get(requestId)?.owner !== owner) return;
    this.routes.delete(requestId);
  }

  /** One PUBLISH: a frame of one or more messages, each routed on its own. */
  private dispatch(raw: string): void {
    let records: unknown[];
    try {
      records = parseReplyFrame(raw);
    } catch (error) {
      // A frame may carry several requests' messages: all of them are lost, so all of them end now.
      const requestIds = peekRequestIds(raw);
      this.logger.warn(
        `dropping malformed reply frame (requests ${requestIds.join(', ') || 'unknown'}): ${(error as Error).message}`,
      );
      for (const requestId of requestIds) this.fail(requestId, error as ProtocolError);
      return;
    }
    for (const record of records) this.route(record);
  }

  private route(record: unknown): void {
    let message: ReplyMessage;
    try {
      message = parseReplyRecord(record);
    } catch (error) {
      const requestId = requestIdOfRecord(record);
      this.logger.warn(`dropping reply (request ${requestId ?? 'unknown'}): ${(error as Error).message}`);
      if (requestId) this.fail(requestId, error as ProtocolError);
      return;
    }
    const route = this.routes.get(message.requestId);
    if (!route) return; // the request already ended (client gone, deadline); late messages are expected
    if (route.nextSeq !== null && message.seq !== route.nextSeq) {
      // A job re-run after its worker died restarts at 0; harmless while the client has seen nothing yet.
      const restartedBeforeOutput = message.kind === 'started' && message.seq === 0 && route.noOutput;
      if (!restartedBeforeOutput) {
        this.fail(
          message.requestId,
          new ProtocolError(
            `expected message ${route.nextSeq} of request ${message.requestId}, got ${message.seq}`,
          ),
        );
        return;
      }
    }
    route.nextSeq = message.seq + 1;
    route.noOutput &&= message.kind === 'started' || message.kind === 'alive';
    route.handler.onMessage(message);
  }

  /** Whatever was published while we were not subscribed is gone, so no open request can complete. */
  private failAll(): void {
    if (this.routes.size === 0) return;
    this.logger.warn(`reply subscription lost: ending ${this.routes.size} open request(s)`);
    const handlers = [...this.routes.values()].map((route) => route.handler);
    this.routes.clear();
    for (const handler of handlers) handler.onConnectionLost();
  }

  private fail(requestId: string, error: ProtocolError): void {
    const route = this.routes.get(requestId);
    if (!route) return;
    this.routes.delete(requestId);
    route.handler.onProtocolError(error);
  }
}
