import type { ChatDoneMessage, GatewayError, ToolCallMessage } from '@mgw/contracts';
import type { EventSink, RenderContext, StreamFormat, StreamRenderer } from '@mgw/session';
import { toAnthropicError } from './anthropic-error';
import { messageIdFor, stopOf, toolUseIdOf, usageOf } from './message-parts';

/**
 * How a Messages stream looks on the wire: named events, no end line (`message_stop` ends it), and `ping`
 * events while nothing else is written.
 */
export const MESSAGES_STREAM_FORMAT: StreamFormat = {
  protocol: 'anthropic.messages',
  endLine: null,
  keepAlive: 'event: ping\ndata: {"type":"ping"}\n\n',
};

type OpenBlock = { kind: 'text' } | { kind: 'tool'; call: number };

/**
 * A Messages stream, as Anthropic writes one: `message_start`; per content block `content_block_start`,
 * its `content_block_delta`s (`text_delta`, or `input_json_delta` for a tool's input) and
 * `content_block_stop`; then `message_delta` (stop reason, usage) and `message_stop`. Text and each tool
 * call are one block each, in the order they arrive; only choice 0 exists (the API has no `n`).
 *
 * `message_start` is written with the first event, so that a renderer replaced before any output (a
 * fallback's) has written nothing.
 */
export class MessageStreamRenderer implements StreamRenderer {
  private started = false;
  private open: OpenBlock | null = null;
  private blocks = 0;

  constructor(
    private readonly sse: EventSink,
    private readonly context: RenderContext,
  ) {}

  delta(choice: number, content: string): void {
    if (choice !== 0 || content.length === 0) return;
    if (this.open?.kind !== 'text') this.startBlock({ kind: 'text' }, { type: 'text', text: '' });
    this.emit('content_block_delta', {
      type: 'content_block_delta',
      index: this.blocks - 1,
      delta: { type: 'text_delta', text: content },
    });
  }

  toolCall(piece: ToolCallMessage): void {
    if (piece.choice !== 0) return;
    const open = this.open;
    if (open?.kind !== 'tool' || open.call !== piece.index) {
      this.startBlock(
        { kind: 'tool', call: piece.index },
        {
          type: 'tool_use',
          id: toolUseIdOf(piece.id ?? `${this.context.requestId}_${piece.index}`),
          name: piece.name ?? '',
          input: {},
        },
      );
    }
    if (piece.arguments.length === 0) return;
    this.emit('content_block_delta', {
      type: 'content_block_delta',
      index: this.blocks - 1,
      delta: { type: 'input_json_delta', partial_json: piece.arguments },
    });
  }

  /** A chat model has no images. */
  image(): void {}

  done(message: ChatDoneMessage): void {
    this.start();
    this.stopBlock();
    const usage = usageOf(message);
    this.emit('message_delta', {
      type: 'message_delta',
      delta: stopOf(message),
      usage: {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    });
    this.emit('message_stop', { type: 'message_stop' });
    this.sse.done();
  }

  /** A failure after the 200: Anthropic's `error` event, then the stream ends. */
  error(error: GatewayError): void {
    this.sse.event('error', JSON.stringify(toAnthropicError(error).body));
    this.sse.close();
  }

  moved(): void {
    this.sse.close();
  }

  private start(): void {
    if (this.started) return;
    this.started = true;
    const { requestId, model } = this.context;
    this.emit('message_start', {
      type: 'message_start',
      message: {
        id: messageIdFor(requestId),
        type: 'message',
        role: 'assistant',
        content: [],
        model,
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: 0,
          output_tokens: 0,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
        },
      },
    });
  }

  private startBlock(block: OpenBlock, content: object): void {
    this.start();
    this.stopBlock();
    this.open = block;
    this.emit('content_block_start', {
      type: 'content_block_start',
      index: this.blocks++,
      content_block: content,
    });
  }

  private stopBlock(): void {
    if (this.open === null) return;
    this.open = null;
    this.emit('content_block_stop', { type: 'content_block_stop', index: this.blocks - 1 });
  }

  private emit(name: string, event: object): void {
    this.sse.event(name, JSON.stringify(event));
  }
}
