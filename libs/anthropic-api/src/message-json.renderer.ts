import { GatewayError, type ChatDoneMessage, type ToolCallMessage } from '@mgw/contracts';
import type { JsonRenderer, RenderContext } from '@mgw/session';
import { messageIdFor, stopOf, toolUseIdOf, usageOf } from './message-parts';
import type { AnthropicMessage, ResponseContentBlock } from './messages.types';

/**
 * How much one non-streaming message may collect in memory, in characters of text and tool input: far
 * beyond any real answer, a bound on what a faulty backend can make a gateway hold.
 */
export const MAX_MESSAGE_CHARS = 16 * 1024 * 1024;

interface PendingCall {
  id: string;
  name: string;
  input: string[];
}

/** A tool's input as an object; a backend's invalid JSON is kept as the text it was, under `raw`. */
function inputOf(json: string): unknown {
  if (json.trim().length === 0) return {};
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return { raw: json };
  }
}

/**
 * A non-streaming Messages answer: text and tool calls collected into one `message`, its text first, then
 * its tool uses in call order. An answer past its bound is refused at once (`refuse`: the session answers
 * 502 and stops the job).
 */
export class MessageJsonRenderer implements JsonRenderer<AnthropicMessage> {
  private readonly text: string[] = [];
  private readonly calls: PendingCall[] = [];
  private size = 0;
  private whole = true;

  constructor(
    private readonly context: RenderContext,
    private readonly refuse: (error: GatewayError) => void,
    private readonly maxChars = MAX_MESSAGE_CHARS,
  ) {}

  delta(choice: number, content: string): void {
    if (choice !== 0 || !this.grow(content.length)) return;
    this.text.push(content);
  }

  toolCall(piece: ToolCallMessage): void {
    if (piece.choice !== 0 || !this.grow(piece.arguments.length)) return;
    const call = (this.calls[piece.index] ??= {
      id: `${this.context.requestId}_${piece.index}`,
      name: '',
      input: [],
    });
    if (piece.id !== undefined) call.id = piece.id;
    if (piece.name !== undefined) call.name = piece.name;
    call.input.push(piece.arguments);
  }

  /** A chat model has no images. */
  image(): void {}

  done(message: ChatDoneMessage): AnthropicMessage {
    const content: ResponseContentBlock[] = [];
    const text = this.text.join('');
    if (text.length > 0) content.push({ type: 'text', text });
    for (const call of this.calls) {
      // Indexes a backend skipped leave holes, which for…of visits as undefined.
      if (call === undefined) continue;
      content.push({
        type: 'tool_use',
        id: toolUseIdOf(call.id),
        name: call.name,
        input: inputOf(call.input.join('')),
      });
    }
    return {
      id: messageIdFor(this.context.requestId),
      type: 'message',
      role: 'assistant',
      content,
      model: this.context.model,
      ...stopOf(message),
      usage: usageOf(message),
    };
  }

  private grow(chars: number): boolean {
    if (!this.whole) return false;
    this.size += chars;
    if (this.size <= this.maxChars) return true;
    this.whole = false;
    this.refuse(
      GatewayError.workerFailed(
        `The model's answer exceeded the ${this.maxChars} characters a non-streaming message may hold; use stream: true or a lower max_tokens.`,
      ),
    );
    return false;
  }
}
