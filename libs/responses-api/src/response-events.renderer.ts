import type { ChatDoneMessage, GatewayError, ImageDoneMessage, ToolCallMessage } from '@mgw/contracts';
import type { EventSink, StreamFormat, StreamRenderer } from '@mgw/session';
import { ResponseOutput, type ResponseBase } from './response-output';
import type { ResponseObject } from './responses.types';

/** How a Responses stream looks on the wire: named events, no end line (the last event says it all). */
export const RESPONSES_STREAM_FORMAT: StreamFormat = { protocol: 'responses', endLine: null };

/**
 * A Responses stream: `response.created` and `response.in_progress` before the first output, the output's
 * item and part events as replies come, then `response.completed` (or `.incomplete`), or `error` and
 * `response.failed`. Every event carries its `sequence_number`, from 0 with no gaps, which is also its SSE
 * id: events follow from the replies alone, so a replay renders the same numbers and a resume writes only
 * those after `after` (`starting_after`).
 */
export class ResponseEventsRenderer implements StreamRenderer {
  private next = 0;
  private started = false;
  private readonly output: ResponseOutput;
  /** The JSON every text delta of the open message starts with, up to its `delta`. */
  private deltaHead: { itemId: string; json: string } | null = null;

  constructor(
    private readonly sse: EventSink,
    private readonly base: ResponseBase,
    private readonly after = -1,
    /** Told the final response before the last event is written (a stored response is kept first). */
    private readonly onEnd: ((response: ResponseObject) => Promise<void>) | null = null,
  ) {
    this.output = new ResponseOutput(base, {
      event: (type, fields) => this.emit(type, fields),
      textDelta: (itemId, outputIndex, delta) => this.emitTextDelta(itemId, outputIndex, delta),
    });
  }

  delta(_choice: number, content: string): void {
    this.start();
    this.output.text(content);
  }

  toolCall(piece: ToolCallMessage): void {
    this.start();
    this.output.toolCall(piece);
  }

  /** A response has no images. */
  image(): void {}

  done(message: ChatDoneMessage | ImageDoneMessage): void {
    this.start();
    const response = this.output.finish(message as ChatDoneMessage);
    this.end(response, response.status === 'incomplete' ? 'response.incomplete' : 'response.completed');
  }

  /**
   * A failure after the 200: `error`, then `response.failed` — never a clean-looking end. The session
   * tells a refusal by the Responses field, as the same refusal before the 200 is.
   */
  error(error: GatewayError): void {
    this.start();
    this.emit('error', { code: error.code ?? error.type, message: error.message, param: error.param });
    this.end(this.output.failed(error), 'response.failed');
  }

  /** The stream went on elsewhere (resumed on another gateway): this connection closes without an end. */
  moved(): void {
    this.sse.close();
  }

  private start(): void {
    if (this.started) return;
    this.started = true;
    const response = this.output.snapshot('in_progress');
    this.emit('response.created', { response });
    this.emit('response.in_progress', { response });
  }

  private end(response: ResponseObject, type: string): void {
    const finish = (): void => {
      this.emit(type, { response });
      this.sse.done();
    };
    if (this.onEnd === null) finish();
    else void this.onEnd(response).finally(finish);
  }

  private emit(type: string, fields: Record<string, unknown>): void {
    const sequence = this.next++;
    if (sequence <= this.after) return;
    // `{"type":…,<fields>,"sequence_number":n}` written around the fields' own JSON: spreading them into a
    // new object for every delta cost more than serializing it.
    const body = JSON.stringify(fields);
    const data = `{"type":${JSON.stringify(type)},${body.slice(1, -1)},"sequence_number":${sequence}}`;
    this.sse.event(type, data, sequence);
  }

  /** A token: its event's JSON is the message's fixed head, the delta, and the sequence number. */
  private emitTextDelta(itemId: string, outputIndex: number, delta: string): void {
    const sequence = this.next++;
    if (sequence <= this.after) return;
    let head = this.deltaHead;
    if (head?.itemId !== itemId) {
      const json = `{"type":"response.output_text.delta","item_id":${JSON.stringify(itemId)},"output_index":${outputIndex},"content_index":0,"delta":`;
      head = this.deltaHead = { itemId, json };
    }
    const data = `${head.json}${JSON.stringify(delta)},"logprobs":[],"sequence_number":${sequence}}`;
    this.sse.event('response.output_text.delta', data, sequence);
  }
}
