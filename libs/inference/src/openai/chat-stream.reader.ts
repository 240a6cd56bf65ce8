import type { FinishReason } from '@mgw/contracts';
import type { ChatInferenceEvent, ChatInferenceRequest } from '../chat-backend.interface';
import { countPromptTokens, countTextTokens, type PromptParts } from '../text/token-count';
import { readUpstreamError, upstreamProtocolError } from './upstream-error.mapper';
import { GatewayError } from '@mgw/contracts';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isCount = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/** Ours has `stop` and `length`; an upstream's other reasons (content_filter, tool_calls) ended the text too. */
function finishReasonOf(reason: string): FinishReason {
  return reason === 'length' ? 'length' : 'stop';
}

/**
 * Turns an upstream's chat completion chunks into our backend events, one upstream chunk at a time, and
 * checks the stream as it goes: choice indexes within `n`, every choice finished, `[DONE]` (or every
 * choice finished) before the end. Usage is the upstream's when it sent one, else counted.
 */
export class ChatStreamReader {
  private readonly texts: string[];
  private readonly seen: boolean[];
  private readonly finished: boolean[];
  private usage: { promptTokens: number; completionTokens: number } | null = null;
  private done = false;

  constructor(private readonly request: Pick<ChatInferenceRequest, 'n'> & PromptParts) {
    this.texts = new Array<string>(request.n).fill('');
    this.seen = new Array<boolean>(request.n).fill(false);
    this.finished = new Array<boolean>(request.n).fill(false);
  }

  /** Whether the upstream said `[DONE]`; what it sends after that is ignored. */
  get ended(): boolean {
    return this.done;
  }

  /** One SSE `data` payload of a streamed completion. */
  readEvent(data: string): ChatInferenceEvent[] {
    if (this.done) return [];
    if (data.trim() === '[DONE]') {
      this.done = true;
      return [];
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw upstreamProtocolError('sent a stream event that is not JSON');
    }
    if (!isObject(chunk)) throw upstreamProtocolError('sent a stream event that is not a JSON object');
    if (chunk.error !== undefined && chunk.error !== null) {
      // vLLM and others report a failure during generation as an `error` event on a 200 stream.
      const { message } = readUpstreamError(data);
      throw new GatewayError(
        502,
        'server_error',
        'upstream_error',
        `The upstream model server failed during generation${message === null ? '.' : `: ${message}`}`,
      );
    }
    const events: ChatInferenceEvent[] = [];
    const choices = chunk.choices ?? [];
    if (!Array.isArray(choices)) throw upstreamProtocolError('sent a chunk whose choices is not a list');
    for (const choice of choices) {
      if (!isObject(choice)) throw upstreamProtocolError('sent a choice that is not an object');
      const index = choice.index ?? 0;
      if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= this.request.n) {
        throw upstreamProtocolError(
          `sent choice ${JSON.stringify(index)} for a request of ${this.request.n} choice(s)`,
        );
      }
      this.seen[index] = true;
      if (this.finished[index]) continue;
      const delta = isObject(choice.delta) ? choice.delta : isObject(choice.message) ? choice.message : {};
      if (typeof delta.content === 'string' && delta.content.length > 0) {
        this.texts[index] += delta.content;
        events.push({ type: 'delta', choice: index, text: delta.content });
      }
      if (typeof choice.finish_reason === 'string') {
        this.finished[index] = true;
        events.push({ type: 'finish', choice: index, reason: finishReasonOf(choice.finish_reason) });
      }
    }
    if (
      isObject(chunk.usage) &&
      isCount(chunk.usage.prompt_tokens) &&
      isCount(chunk.usage.completion_tokens)
    ) {
      this.usage = {
        promptTokens: chunk.usage.prompt_tokens,
        completionTokens: chunk.usage.completion_tokens,
      };
    }
    return events;
  }

  /**
   * A whole (non-streamed) completion, for an upstream that answers `stream: true` with plain JSON:
   * each choice's message becomes one delta.
   */
  readCompletion(body: string): ChatInferenceEvent[] {
    const events = this.readEvent(body);
    this.done = true;
    return events;
  }

  /** The stream ended: finishes for choices the upstream left open, then usage (always last). */
  end(): ChatInferenceEvent[] {
    const open = this.finished.flatMap((finished, index) => (finished ? [] : [index]));
    if (!this.done && open.length > 0) throw upstreamProtocolError('ended the stream before it was complete');
    const missing = this.seen.filter((seen) => !seen).length;
    if (missing > 0) {
      throw upstreamProtocolError(
        `returned ${this.request.n - missing} of ${this.request.n} choices (it may not support n)`,
      );
    }
    const events: ChatInferenceEvent[] = open.map((choice) => ({ type: 'finish', choice, reason: 'stop' }));
    const usage = this.usage ?? {
      promptTokens: countPromptTokens(this.request),
      completionTokens: this.texts.reduce((sum, text) => sum + countTextTokens(text), 0),
    };
    events.push({ type: 'usage', ...usage });
    return events;
  }
}
