import type { ChatDoneMessage, GatewayError, ToolCallMessage } from '@mgw/contracts';
import type {
  OutputFunctionCall,
  OutputItem,
  OutputMessage,
  OutputText,
  ResponseEcho,
  ResponseObject,
  ResponseStatus,
} from './responses.types';

/** The largest answer one response assembles (as a chat completion's): past it the answer is refused. */
export const MAX_RESPONSE_CHARS = 16 * 1024 * 1024;

const RESPONSE_ID_PREFIX = 'resp_';

export function responseIdFor(requestId: string): string {
  return `${RESPONSE_ID_PREFIX}${requestId}`;
}

/** The request id inside a response id, or null when `id` is not one of this gateway's response ids. */
export function requestIdOfResponse(id: string): string | null {
  if (!id.startsWith(RESPONSE_ID_PREFIX)) return null;
  const requestId = id.slice(RESPONSE_ID_PREFIX.length);
  return /^[A-Za-z0-9_-]{8,64}$/.test(requestId) ? requestId : null;
}

/** What a response is before any output: who answers, when it was asked, and the request's settings. */
export interface ResponseBase {
  requestId: string;
  model: string;
  createdMs: number;
  echo: ResponseEcho;
}

/** Where a response's output is told as the Responses stream's events while it is built. */
export interface OutputEvents {
  /** An event's own fields (its `type` and `sequence_number` are added by whoever writes it). */
  event(type: string, fields: Record<string, unknown>): void;
  /**
   * `response.output_text.delta` (`content_index` 0, no logprobs): the event of every token, so it has its
   * own path, which a writer can serve without building its fields.
   */
  textDelta(itemId: string, outputIndex: number, delta: string): void;
}

/**
 * A response object at `status`, with the output given. One literal, in the order OpenAI writes the fields:
 * every response has the same shape, where spreading the echo and overriding it would build each one through
 * a chain of shape changes, on the path of every answer.
 */
export function responseObject(
  base: ResponseBase,
  status: ResponseStatus,
  output: OutputItem[],
  extra: Partial<Pick<ResponseObject, 'usage' | 'error' | 'incomplete_details' | 'completed_at'>> = {},
): ResponseObject {
  const { echo } = base;
  return {
    id: responseIdFor(base.requestId),
    object: 'response',
    created_at: Math.floor(base.createdMs / 1000),
    status,
    background: echo.background,
    completed_at: extra.completed_at ?? null,
    error: extra.error ?? null,
    incomplete_details: extra.incomplete_details ?? null,
    instructions: echo.instructions,
    max_output_tokens: echo.max_output_tokens,
    metadata: echo.metadata,
    model: base.model,
    output,
    parallel_tool_calls: echo.parallel_tool_calls,
    previous_response_id: echo.previous_response_id,
    prompt_cache_key: echo.prompt_cache_key,
    reasoning: echo.reasoning,
    safety_identifier: echo.safety_identifier,
    service_tier: echo.service_tier,
    store: echo.store,
    temperature: echo.temperature,
    text: echo.text,
    tool_choice: echo.tool_choice,
    tools: echo.tools,
    top_p: echo.top_p,
    truncation: echo.truncation,
    usage: extra.usage ?? null,
    user: echo.user,
  };
}

/**
 * A response's output as the job's replies build it: text into one assistant `message` item, each tool call
 * into a `function_call` item, in the order they began. With `events`, every step is also told as the
 * Responses stream's events (`response.output_item.added`, `…output_text.delta`, …); without, it only
 * collects. Items are numbered by their place in `output`, so ids and events follow from the replies alone
 * and are the same on every replay.
 */
export class ResponseOutput {
  readonly items: OutputItem[] = [];
  private message: OutputMessage | null = null;
  /** Where the open message is in `items`. */
  private messageIndex = -1;
  private readonly calls = new Map<number, OutputFunctionCall>();
  private chars = 0;

  constructor(
    private readonly base: ResponseBase,
    private readonly events: OutputEvents | null = null,
    private readonly maxChars = MAX_RESPONSE_CHARS,
  ) {}

  /** Adds text; false once the answer is past its bound (nothing more is collected). */
  text(content: string): boolean {
    if (!this.grow(content.length)) return false;
    let message = this.message;
    if (message === null) {
      this.closeCalls();
      message = this.open<OutputMessage>({
        type: 'message',
        id: this.itemId('msg'),
        status: 'in_progress',
        role: 'assistant',
        content: [],
      });
      this.message = message;
      this.messageIndex = this.items.length - 1;
      const part: OutputText = { type: 'output_text', text: '', annotations: [], logprobs: [] };
      message.content.push(part);
      this.events?.event('response.content_part.added', {
        item_id: message.id,
        output_index: this.messageIndex,
        content_index: 0,
        part: { ...part },
      });
    }
    message.content[0]!.text += content;
    this.events?.textDelta(message.id, this.messageIndex, content);
    return true;
  }

  /** Adds a piece of a tool call; false once the answer is past its bound. */
  toolCall(piece: ToolCallMessage): boolean {
    if (!this.grow(piece.arguments.length + (piece.name?.length ?? 0))) return false;
    let call = this.calls.get(piece.index);
    if (call === undefined) {
      this.closeMessage('completed');
      this.closeCalls();
      call = this.open<OutputFunctionCall>({
        type: 'function_call',
        id: this.itemId('fc'),
        status: 'in_progress',
        call_id: piece.id ?? `call_${this.base.requestId}_${piece.index}`,
        name: piece.name ?? '',
        arguments: '',
      });
      this.calls.set(piece.index, call);
    }
    if (piece.arguments !== '') {
      call.arguments += piece.arguments;
      this.events?.event('response.function_call_arguments.delta', {
        item_id: call.id,
        output_index: this.items.indexOf(call),
        delta: piece.arguments,
      });
    }
    return true;
  }

  /** The whole response at the job's end: items closed, the status its finish reason gives. */
  finish(done: ChatDoneMessage): ResponseObject {
    const reason = done.finishReasons[0];
    const incomplete = reason === 'length' || reason === 'content_filter';
    const itemStatus = incomplete ? 'incomplete' : 'completed';
    this.closeMessage(itemStatus);
    this.closeCalls(itemStatus);
    const { prompt_tokens: input, completion_tokens: output } = done.usage;
    return responseObject(this.base, incomplete ? 'incomplete' : 'completed', this.items, {
      completed_at: incomplete ? null : Math.floor(Date.now() / 1000),
      usage: {
        input_tokens: input,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: output,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: input + output,
      },
      incomplete_details: incomplete
        ? { reason: reason === 'length' ? 'max_output_tokens' : 'content_filter' }
        : null,
    });
  }

  /** The response as it failed with `error`: what was produced so far, unfinished. */
  failed(error: GatewayError, status: 'failed' | 'cancelled' = 'failed'): ResponseObject {
    return responseObject(this.base, status, this.items, {
      error: status === 'failed' ? { code: error.code ?? error.type, message: error.message } : null,
    });
  }

  /** The response while it runs. */
  snapshot(status: 'queued' | 'in_progress'): ResponseObject {
    return responseObject(this.base, status, this.items);
  }

  private grow(chars: number): boolean {
    this.chars += chars;
    return this.chars <= this.maxChars;
  }

  private itemId(prefix: 'msg' | 'fc'): string {
    return `${prefix}_${this.base.requestId}_${this.items.length}`;
  }

  private open<T extends OutputItem>(item: T): T {
    this.items.push(item);
    this.events?.event('response.output_item.added', {
      output_index: this.items.length - 1,
      item: structuredClone(item),
    });
    return item;
  }

  private closeMessage(status: OutputMessage['status']): void {
    const message = this.message;
    if (message === null) return;
    this.message = null;
    message.status = status;
    const index = this.items.indexOf(message);
    const part = message.content[0]!;
    this.events?.event('response.output_text.done', {
      item_id: message.id,
      output_index: index,
      content_index: 0,
      text: part.text,
      logprobs: [],
    });
    this.events?.event('response.content_part.done', {
      item_id: message.id,
      output_index: index,
      content_index: 0,
      part,
    });
    this.events?.event('response.output_item.done', { output_index: index, item: message });
  }

  private closeCalls(status: OutputFunctionCall['status'] = 'completed'): void {
    for (const call of this.calls.values()) {
      if (call.status !== 'in_progress') continue;
      call.status = status;
      const index = this.items.indexOf(call);
      this.events?.event('response.function_call_arguments.done', {
        item_id: call.id,
        output_index: index,
        name: call.name,
        arguments: call.arguments,
      });
      this.events?.event('response.output_item.done', { output_index: index, item: { ...call } });
    }
  }
}

/** The settings a response echoes, when its stream is resumed without a stored record to take them from. */
export const UNSTORED_ECHO: ResponseEcho = {
  instructions: null,
  max_output_tokens: null,
  metadata: {},
  parallel_tool_calls: true,
  previous_response_id: null,
  reasoning: { effort: null, summary: null },
  service_tier: 'auto',
  store: false,
  temperature: 1,
  text: { format: { type: 'text' } },
  tool_choice: 'auto',
  tools: [],
  top_p: 1,
  truncation: 'disabled',
  user: null,
  background: false,
  prompt_cache_key: null,
  safety_identifier: null,
};

/** The request settings a stored response repeats. */
export function echoOf(response: ResponseObject): ResponseEcho {
  const echo = { ...UNSTORED_ECHO };
  for (const key of Object.keys(UNSTORED_ECHO) as Array<keyof ResponseEcho>) {
    (echo as Record<string, unknown>)[key] = response[key];
  }
  return echo;
}
