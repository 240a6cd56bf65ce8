import type { ChatDoneMessage, GatewayError, TokenLogprob, ToolCallMessage } from '@mgw/contracts';
import { CHAT_STREAM_END } from '@mgw/http';
import type { EventSink, StreamFormat, StreamRenderer } from '@mgw/session';
import type { ChatChunkSerializer } from './chat-chunk.serializer';

/** How a chat completions stream looks on the wire: anonymous `data:` events, then `data: [DONE]`. */
export const CHAT_STREAM_FORMAT: StreamFormat = { protocol: 'chat.completions', endLine: CHAT_STREAM_END };

/**
 * A chat stream's replies as numbered SSE events. The events follow from the stream's reply messages
 * alone, so numbering them from the first message gives every event the same id on every replica and on
 * every replay: `id: 0, 1, 2…` on each `data:` event, the final `[DONE]` included.
 *
 * A resumed stream is rendered from its first message too (a chunk's role depends on what came before),
 * and writes only the events after `after`; `[DONE]` always ends it, so a resume after the end still ends.
 */
export class ChatEventWriter implements StreamRenderer {
  /** The id of the next event. */
  private next = 0;

  constructor(
    private readonly sse: EventSink,
    private readonly chunks: ChatChunkSerializer,
    private readonly after = -1,
  ) {}

  delta(choice: number, content: string, logprobs?: TokenLogprob[]): void {
    const opening = logprobs === undefined ? null : this.chunks.opening(choice);
    if (opening !== null) this.emit(opening);
    this.emit(this.chunks.delta(choice, content, logprobs));
  }

  toolCall(piece: ToolCallMessage): void {
    this.emit(this.chunks.toolCall(piece));
  }

  /** A chat stream has no images. */
  image(): void {}

  done(done: ChatDoneMessage): void {
    this.emit(this.chunks.final(done));
    this.sse.done(this.next++);
  }

  /** A failure after the 200: the error as an event, then `[DONE]` — never a clean-looking end alone. */
  error(error: GatewayError): void {
    this.emit(JSON.stringify(error.toBody()));
    this.sse.done(this.next++);
  }

  /** The stream went on on another gateway (resumed there): this connection closes without an end. */
  moved(): void {
    this.sse.close();
  }

  private emit(json: string): void {
    const id = this.next++;
    if (id > this.after) this.sse.data(json, id);
  }
}
