import { GatewayError } from '@mgw/contracts';
import type { ConversationItem, InputContentPart } from './responses.types';

/** The bounds a conversation is held to once its stored parts are expanded: those of a body sent whole. */
export interface ExpansionLimits {
  /** Bytes of the strings the conversation carries (text, image URLs, tool names and arguments). */
  bytes: number;
  /** Characters of text across the messages' content. */
  textChars: number;
  /** Image parts across the conversation. */
  imageParts: number;
  /** Bytes of image URLs across the conversation (a `data:` URL counts its whole text). */
  imageBytes: number;
  /** Chat messages the conversation becomes (consecutive function calls join one assistant message). */
  messages: number;
}

/** Which field of the request brought an item: its stored conversation, or its own input. */
export type ExpansionParam = 'input' | 'previous_response_id';

type Measure = 'bytes' | 'textChars' | 'imageParts' | 'imageBytes' | 'messages';

const WORDS: Readonly<Record<Measure, string>> = {
  bytes: 'bytes',
  textChars: 'characters of text',
  imageParts: 'image parts',
  imageBytes: 'bytes of image URLs',
  messages: 'messages',
};

/**
 * What a conversation costs as it is put together from its stored history and its input's references,
 * charged item by item: the first item that passes a limit throws, so a request over a limit is refused at
 * the cost of the limit, however many times its references repeat an item (each repetition counts).
 */
export class ExpansionBudget {
  private readonly used: Record<Measure, number> = {
    bytes: 0,
    textChars: 0,
    imageParts: 0,
    imageBytes: 0,
    messages: 0,
  };
  /** Whether the last message is the assistant's: a function call then joins it instead of adding one. */
  private assistantLast = false;

  constructor(private readonly limits: Readonly<ExpansionLimits>) {}

  /** The byte limit: a stored part longer than this need not be read to be refused. */
  get maxBytes(): number {
    return this.limits.bytes;
  }

  /** Counts `item`, or throws the `400` naming `param` and the limit it passes. */
  charge(item: ConversationItem, param: ExpansionParam): void {
    switch (item.type) {
      case 'message':
        this.add('messages', 1, param);
        this.assistantLast = item.role === 'assistant';
        this.content(item.content, param);
        return;
      case 'function_call':
        if (!this.assistantLast) this.add('messages', 1, param);
        this.assistantLast = true;
        this.add('bytes', Buffer.byteLength(item.name) + Buffer.byteLength(item.arguments), param);
        return;
      case 'function_call_output':
        this.add('messages', 1, param);
        this.assistantLast = false;
        this.content(item.output, param);
        return;
    }
  }

  /**
   * The refusal of a stored part found over the byte limit before it was read (`bytes` as stored, JSON):
   * a request sent whole with that part would be over the body limit too.
   */
  overBytes(bytes: number, param: ExpansionParam): GatewayError {
    return this.over('bytes', bytes, param);
  }

  private content(content: string | readonly InputContentPart[], param: ExpansionParam): void {
    if (typeof content === 'string') {
      this.text(content, param);
      return;
    }
    for (const part of content) {
      switch (part.type) {
        case 'input_image': {
          const url = part.image_url ?? '';
          this.add('imageParts', 1, param);
          this.add('imageBytes', url.length, param);
          this.add('bytes', url.length, param);
          break;
        }
        case 'refusal':
          this.text(part.refusal, param);
          break;
        default:
          this.text(part.text, param);
      }
    }
  }

  private text(text: string, param: ExpansionParam): void {
    this.add('textChars', text.length, param);
    this.add('bytes', Buffer.byteLength(text), param);
  }

  private add(measure: Measure, amount: number, param: ExpansionParam): void {
    const total = this.used[measure] + amount;
    if (total > this.limits[measure]) throw this.over(measure, total, param);
    this.used[measure] = total;
  }

  private over(measure: Measure, total: number, param: ExpansionParam): GatewayError {
    const limit = this.limits[measure];
    const source =
      param === 'input' ? 'with its item references resolved' : 'with the stored conversation it continues';
    return GatewayError.invalidRequest(
      `Invalid '${param}': the request ${source} is over the limit of ${limit} ${WORDS[measure]} (at least ${total}).`,
      param,
      'request_too_large',
    );
  }
}
