/**
 * A stream's events as its renderer writes them: server-sent events, anonymous (`data`) or named
 * (`event`), with the id a client resumes after; `done` ends with the protocol's last line, `fail` with the
 * error as the last event. The HTTP layer's `SseWriter` is one.
 */
export interface EventSink {
  data(json: string, id?: number): void;
  event(name: string, json: string, id?: number): void;
  done(id?: number): void;
  fail(errorJson: string): void;
  close(): void;
}

/** What every client of a session offers, whatever its answer's shape. */
interface ClientPort {
  /** The client left before its answer was complete. */
  readonly gone: boolean;
  /** Headers that go with the answer (the key's limits); ignored once an answer has gone out. */
  setHeaders(headers: Record<string, string>): void;
  /**
   * Calls `onGone` when the client leaves before its answer was complete, or a stream's client stopped
   * reading and its stream was cut — at once when it has left already.
   */
  whenGone(onGone: () => void): void;
}

/** A client waiting for one JSON answer. */
export interface JsonClient extends ClientPort {
  readonly mode: 'json';
  /** The 200, with `headers`, and the whole answer. */
  send(headers: Record<string, string>, body: unknown): Promise<void>;
}

/** A client of a stream of events. */
export interface StreamClient extends ClientPort {
  readonly mode: 'stream';
  /** Where the stream's renderer writes; what it writes before `open` waits for it. */
  readonly events: EventSink;
  /**
   * The 200, with `headers`: from here on the connection belongs to the stream. True once, when it opened;
   * false when the client has gone or the stream is open already.
   */
  open(headers: Record<string, string>): boolean;
}

/**
 * The session's port to its client (open, write, end): the HTTP layer implements it for a JSON answer and
 * for server-sent events, so the session never touches the HTTP reply itself.
 */
export type SessionClient = JsonClient | StreamClient;
