import {
  parseReplyFrame,
  parseReplyRecord,
  peekRequestIds,
  ProtocolError,
  requestIdOfRecord,
  type ReplyMessage,
  type ComponentLogger,
} from '@mgw/contracts';
import type { PubSubDispatcher } from '@mgw/redis';

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
  /** Messages that arrived ahead of a missing one, by seq, while it may still come (see `ReorderWindow`). */
  ahead: Map<number, ReplyMessage> | null;
  /** Ends the wait for the missing message. */
  gapTimer: NodeJS.Timeout | null;
}

/**
 * How long, and for how many messages, a request waits for a missing message while later ones arrive. On a
 * Redis Cluster a worker sends a frame its gateway did not hear again (a reshard moved the channel), and a
 * frame it had already sent behind it may be heard first; everywhere else a gap is a lost message at once.
 */
export interface ReorderWindow {
  ms: number;
  maxMessages: number;
}

/**
 * Demultiplexes this gateway instance's single reply channel to in-flight requests by request id.
 * There is one SUBSCRIBE per process, made at start: nothing on the request path touches subscriptions.
 * Each request gets its messages in seq order or fails; with a reorder window (a Cluster's) a message that
 * overtook a missing one waits for it, for that window, instead of failing its request at once.
 */
export class ReplyRouter {
  private readonly routes = new Map<string, Route>();

  constructor(
    private readonly pubsub: PubSubDispatcher,
    readonly channel: string,
    private readonly logger: Pick<ComponentLogger, 'warn'>,
    /** Null: a message out of order fails its request at once. */
    private readonly reorder: ReorderWindow | null = null,
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
    this.replace(requestId, {
      handler,
      owner: handler,
      nextSeq: 0,
      noOutput: true,
      ahead: null,
      gapTimer: null,
    });
  }

  /**
   * Routes a stream resumed here: its worker redirects the replies to this channel mid-stream, so they start
   * at whatever sequence number came next (`handler` checks them against the replay log).
   */
  registerResumed(requestId: string, handler: ReplyHandler, owner: object): void {
    this.replace(requestId, { handler, owner, nextSeq: null, noOutput: false, ahead: null, gapTimer: null });
  }

  /** With `owner`, only that request's route goes (a resumed request may have replaced it already). */
  unregister(requestId: string, owner?: object): void {
    const route = this.routes.get(requestId);
    if (!route || (owner !== undefined && route.owner !== owner)) return;
    this.routes.delete(requestId);
    dropAhead(route);
  }

  private replace(requestId: string, route: Route): void {
    const before = this.routes.get(requestId);
    if (before) dropAhead(before);
    this.routes.set(requestId, route);
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
        if (message.seq > route.nextSeq && this.holdAhead(route, message)) return;
        this.fail(message.requestId, gapError(message.requestId, route.nextSeq, message.seq));
        return;
      }
      dropAhead(route); // held for the run that stopped
    }
    this.deliver(route, message);
  }

  /** Hands `message` to its request, then every held message that now comes next. */
  private deliver(route: Route, message: ReplyMessage): void {
    for (let next: ReplyMessage | undefined = message; next;) {
      route.ahead?.delete(next.seq);
      route.nextSeq = next.seq + 1;
      route.noOutput &&= next.kind === 'started' || next.kind === 'alive';
      route.handler.onMessage(next);
      if (this.routes.get(next.requestId) !== route) return; // that message ended the request
      next = route.ahead?.get(route.nextSeq);
    }
    if (!route.ahead) return;
    // Held messages left: another one is missing, and gets a window of its own.
    if (route.ahead.size === 0) dropAhead(route);
    else this.awaitGap(message.requestId, route);
  }

  /**
   * Within the reorder window (a Cluster's), keeps a message that came ahead of a missing one until the
   * missing one arrives; false when it must fail its request instead.
   */
  private holdAhead(route: Route, message: ReplyMessage): boolean {
    if (!this.reorder) return false;
    route.ahead ??= new Map();
    if (route.ahead.has(message.seq) || route.ahead.size >= this.reorder.maxMessages) return false;
    route.ahead.set(message.seq, message);
    if (!route.gapTimer) this.awaitGap(message.requestId, route);
    return true;
  }

  /** Gives the missing message of `route` the reorder window to come (again, after one that came). */
  private awaitGap(requestId: string, route: Route): void {
    if (route.gapTimer) clearTimeout(route.gapTimer);
    route.gapTimer = setTimeout(() => this.gapExpired(requestId, route), this.reorder?.ms);
    route.gapTimer.unref();
  }

  /** The missing message did not come within the window: it is lost, and the request ends as on a gap. */
  private gapExpired(requestId: string, route: Route): void {
    route.gapTimer = null;
    if (this.routes.get(requestId) !== route || !route.ahead || route.ahead.size === 0) return;
    this.fail(requestId, gapError(requestId, route.nextSeq ?? 0, Math.min(...route.ahead.keys())));
  }

  /** Whatever was published while we were not subscribed is gone, so no open request can complete. */
  private failAll(): void {
    if (this.routes.size === 0) return;
    this.logger.warn(`reply subscription lost: ending ${this.routes.size} open request(s)`);
    const routes = [...this.routes.values()];
    this.routes.clear();
    for (const route of routes) dropAhead(route);
    const handlers = routes.map((route) => route.handler);
    for (const handler of handlers) handler.onConnectionLost();
  }

  private fail(requestId: string, error: ProtocolError): void {
    const route = this.routes.get(requestId);
    if (!route) return;
    this.routes.delete(requestId);
    dropAhead(route);
    route.handler.onProtocolError(error);
  }
}

function dropAhead(route: Route): void {
  if (route.gapTimer) clearTimeout(route.gapTimer);
  route.gapTimer = null;
  route.ahead = null;
}

function gapError(requestId: string, expected: number, got: number): ProtocolError {
  return new ProtocolError(`expected message ${expected} of request ${requestId}, got ${got}`);
}
