import type { ProtocolError, ReplyMessage } from '@mgw/contracts';
import type { ReplyHandler } from '@mgw/queue';
import { ResumeGate } from './resume.gate';

const requestId = 'req_0123456789';
const started = (seq: number, workerId = 'w1'): ReplyMessage => ({
  requestId,
  seq,
  kind: 'started',
  workerId,
});
const delta = (seq: number): ReplyMessage => ({
  requestId,
  seq,
  kind: 'delta',
  choice: 0,
  content: `t${seq}`,
});
const alive = (seq: number): ReplyMessage => ({ requestId, seq, kind: 'alive' });
const moved = (seq: number): ReplyMessage => ({ requestId, seq, kind: 'moved' });

class Target implements ReplyHandler {
  readonly seen: string[] = [];
  readonly errors: string[] = [];
  onMessage(message: ReplyMessage): void {
    this.seen.push(`${message.seq}:${message.kind}`);
  }
  onProtocolError(error: ProtocolError): void {
    this.errors.push(error.message);
  }
  onConnectionLost(): void {
    this.errors.push('lost');
  }
}

/** A log that can be read while the test decides when the read returns. */
class Log {
  messages: ReplyMessage[] = [];
  private pending: (() => void)[] = [];
  reads = 0;
  read = (): Promise<ReplyMessage[]> => {
    this.reads++;
    const snapshot = [...this.messages];
    return new Promise((resolve) => this.pending.push(() => resolve(snapshot)));
  };
  release(): void {
    for (const resolve of this.pending.splice(0)) resolve();
  }
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('ResumeGate', () => {
  it('delivers the log, then live messages, each once and in order', async () => {
    const target = new Target();
    const log = new Log();
    log.messages = [started(0), delta(1), delta(2)];
    const gate = new ResumeGate(target, log.read);
    const reading = gate.catchUp();
    gate.onMessage(delta(2)); // published before the reattach took effect: in the log too
    gate.onMessage(moved(3)); // live: the stream left (never happens here, but delivered as it came)
    log.release();
    await reading;
    expect(target.seen).toEqual(['0:started', '1:delta', '2:delta', '3:moved']);
    expect(target.errors).toEqual([]);
  });

  it('reads the log again when a live message skips ahead of what was delivered', async () => {
    const target = new Target();
    const log = new Log();
    log.messages = [started(0), delta(1)];
    const gate = new ResumeGate(target, log.read);
    const first = gate.catchUp();
    log.release();
    await first;
    // The worker went on meanwhile and then switched here: 2..4 are only in the log; 5 is the first live.
    log.messages = [started(0), delta(1), delta(2), delta(3), moved(4), alive(5)];
    gate.onMessage(alive(5));
    gate.onMessage(delta(6));
    expect(log.reads).toBe(2);
    log.release();
    await settle();
    expect(target.seen).toEqual(['0:started', '1:delta', '2:delta', '3:delta', '5:alive', '6:delta']);
    expect(target.errors).toEqual([]);
  });

  it('reads again when a live message newer than the read under way arrives, and only then reports a real gap', async () => {
    const target = new Target();
    const log = new Log();
    log.messages = [started(0)];
    const gate = new ResumeGate(target, log.read);
    const reading = gate.catchUp();
    gate.onMessage(delta(3)); // arrived after the read was issued: the read may not hold 1, 2
    log.messages = [started(0), delta(1), delta(2), delta(3)];
    log.release();
    await settle();
    expect(log.reads).toBe(2);
    log.release();
    await reading;
    expect(target.seen).toEqual(['0:started', '1:delta', '2:delta', '3:delta']);

    // A message the log does not hold although it was published after it: the stream is broken.
    gate.onMessage(delta(6));
    log.release();
    await settle();
    expect(target.errors).toEqual([expect.stringContaining('message 6 arrived, 4 is not in its replay log')]);
  });

  it('skips a move found in the log (an earlier one) and accepts a job that restarted before any output', async () => {
    const target = new Target();
    const log = new Log();
    log.messages = [started(0, 'dead'), alive(1), moved(2), started(0, 'w2'), delta(1)];
    const gate = new ResumeGate(target, log.read);
    const reading = gate.catchUp();
    log.release();
    await reading;
    expect(target.seen).toEqual(['0:started', '1:alive', '0:started', '1:delta']);
  });

  it('joins a read under way instead of starting another', async () => {
    const log = new Log();
    const gate = new ResumeGate(new Target(), log.read);
    const a = gate.catchUp();
    const b = gate.catchUp();
    expect(log.reads).toBe(1);
    log.release();
    await Promise.all([a, b]);
  });

  it('fails the request when the log cannot be read', async () => {
    const target = new Target();
    const gate = new ResumeGate(target, () => Promise.reject(new Error('connection closed')));
    await gate.catchUp();
    expect(target.errors).toEqual([expect.stringContaining('replay log not read: Error: connection closed')]);
  });
});
