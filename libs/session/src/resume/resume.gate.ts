import { ProtocolError, type ReplyMessage } from '@mgw/contracts';
import type { ReplyHandler } from '@mgw/queue';

/**
 * Feeds a resumed request its stream's messages in order, each exactly once, from two sources: the replay
 * log and the live messages its worker sends here after the reattach. Every message is in the log before it
 * is published (same connection, in order), so a live message that skips ahead — the first one after the
 * reattach — means the log holds what lies between: the live messages wait while the log is read, those
 * already delivered from it are dropped.
 *
 * A job that ran again after its worker died restarts at 0 (`started`, before any output): that is a restart,
 * not a duplicate, as in the reply router.
 */
export class ResumeGate implements ReplyHandler {
  private nextSeq = 0;
  private noOutput = true;
  /** Live messages held while the log is read; null when none is being read. */
  private held: ReplyMessage[] | null = null;
  private heard = false;
  private reading: Promise<void> | null = null;
  /** Messages of the log gone through already: the log only grows, so a re-read goes on from there. */
  private logRead = 0;

  constructor(
    private readonly target: ReplyHandler,
    private readonly readLog: () => Promise<ReplyMessage[]>,
  ) {}

  /** Whether a live message arrived: the worker sends here now. */
  get heardLive(): boolean {
    return this.heard;
  }

  onMessage(message: ReplyMessage): void {
    this.heard = true;
    if (this.held !== null) {
      this.held.push(message);
      return;
    }
    if (message.seq > this.nextSeq && !this.isRestart(message)) {
      this.held = [message];
      void this.catchUp();
      return;
    }
    this.deliver(message, true);
  }

  onProtocolError(error: ProtocolError): void {
    this.target.onProtocolError(error);
  }

  onConnectionLost(): void {
    this.target.onConnectionLost();
  }

  /**
   * Reads the log and delivers what it holds beyond what was delivered, then the live messages held. A live
   * message that arrived while the log was being read may be newer than that read: the log is read again.
   * One read at a time; asked meanwhile, the call joins the read under way.
   */
  catchUp(): Promise<void> {
    this.reading ??= this.read().finally(() => (this.reading = null));
    return this.reading;
  }

  private async read(): Promise<void> {
    for (;;) {
      this.held ??= [];
      // Live messages held before this read was issued are in the log it returns.
      const coveredBefore: number = this.held.length;
      let log: ReplyMessage[];
      try {
        log = await this.readLog();
      } catch (error) {
        this.held = null;
        this.target.onProtocolError(
          error instanceof ProtocolError ? error : new ProtocolError(`replay log not read: ${String(error)}`),
        );
        return;
      }
      for (const message of log.slice(this.logRead)) this.deliver(message, false);
      this.logRead = Math.max(this.logRead, log.length);
      const held: ReplyMessage[] = this.held ?? [];
      const gap = held.findIndex((message) => message.seq > this.nextSeq && !this.isRestart(message));
      if (gap === -1 || gap < coveredBefore) {
        // Delivered in order; a gap the log should have filled is reported by `deliver`.
        this.held = null;
        for (const message of held) this.deliver(message, true);
        return;
      }
      for (const message of held.slice(0, gap)) this.deliver(message, true);
      this.held = held.slice(gap);
    }
  }

  private isRestart(message: ReplyMessage): boolean {
    return message.kind === 'started' && message.seq === 0 && this.noOutput && this.nextSeq > 0;
  }

  private deliver(message: ReplyMessage, live: boolean): void {
    const restart = this.isRestart(message);
    if (message.seq < this.nextSeq && !restart) return; // delivered already
    if (message.seq > this.nextSeq && !restart) {
      this.target.onProtocolError(
        new ProtocolError(
          `stream ${message.requestId}: message ${message.seq} arrived, ${this.nextSeq} is not in its replay log`,
        ),
      );
      return;
    }
    this.nextSeq = message.seq + 1;
    this.noOutput &&= message.kind === 'started' || message.kind === 'alive' || message.kind === 'moved';
    // A move in the log is an earlier one (to the gateway that held the stream before); only a live one
    // means the stream left this gateway.
    if (message.kind === 'moved' && !live) return;
    this.target.onMessage(message);
  }
}
