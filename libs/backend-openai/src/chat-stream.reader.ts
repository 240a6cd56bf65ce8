import type { FinishReason, TokenLogprob, TopLogprob } from '@mgw/contracts';
import {
  type ChatInferenceEvent,
  type ChatInferenceRequest,
  countPromptTokensInSlices,
  countTextTokensInSlices,
  type PromptParts,
  TimeSlicer,
} from '@mgw/inference';
import { readUpstreamError, upstreamProtocolError } from './upstream-error.mapper';
import { GatewayError } from '@mgw/contracts';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isCount = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/**
 * OpenAI's four reasons are kept as they are. Others map to the closest: the legacy `function_call` is a
 * tool call; anything else (TGI's `eos_token`, vLLM's `abort`, …) ended the text, so `stop`.
 */
function finishReasonOf(reason: string): FinishReason {
  switch (reason) {
    case 'length':
    case 'tool_calls':
    case 'content_filter':
      return reason;
    case 'function_call':
      return 'tool_calls';
    default:
      return 'stop';
  }
}

const isByteList = (value: unknown): value is number[] =>
  Array.isArray(value) && value.every((byte) => Number.isInteger(byte) && byte >= 0 && byte <= 255);

function topLogprobOf(value: unknown): TopLogprob {
  if (
    !isObject(value) ||
    typeof value.token !== 'string' ||
    typeof value.logprob !== 'number' ||
    !Number.isFinite(value.logprob) ||
    (value.bytes !== undefined && value.bytes !== null && !isByteList(value.bytes))
  ) {
    throw upstreamProtocolError('sent a malformed logprob');
  }
  return { token: value.token, logprob: value.logprob, bytes: value.bytes ?? null };
}

/** `choices[].logprobs.content` of a chunk, checked; null when the chunk has none. */
function logprobsOf(choice: Json): TokenLogprob[] | null {
  const logprobs = choice.logprobs;
  if (logprobs === undefined || logprobs === null) return null;
  if (!isObject(logprobs)) throw upstreamProtocolError('sent logprobs that are not an object');
  const content = logprobs.content;
  if (content === undefined || content === null) return null;
  if (!Array.isArray(content)) throw upstreamProtocolError('sent logprobs whose content is not a list');
  return content.map((entry: unknown) => {
    const top = isObject(entry) ? (entry.top_logprobs ?? []) : null;
    if (!Array.isArray(top)) throw upstreamProtocolError('sent top_logprobs that are not a list');
    return { ...topLogprobOf(entry), top_logprobs: top.map(topLogprobOf) };
  });
}

/** A tool call of one choice as it streams in: its upstream index maps to ours, 0, 1, … in start order. */
interface OpenToolCall {
  index: number;
  argumentsText: string;
  name: string;
}

/**
 * Turns an upstream's chat completion chunks into our backend events, one upstream chunk at a time, and
 * checks the stream as it goes: choice indexes within `n`, every choice finished, `[DONE]` (or every
 * choice finished) before the end. Usage is the upstream's when it sent one, else counted.
 */
export class ChatStreamReader {
  private readonly texts: string[];
  /** Per choice, the tool calls started so far by the upstream's index. */
  private readonly toolCalls: Array<Map<number, OpenToolCall>>;
  private readonly seen: boolean[];
  private readonly finished: boolean[];
  private usage: { promptTokens: number; completionTokens: number } | null = null;
  private done = false;

  constructor(private readonly request: Pick<ChatInferenceRequest, 'n'> & PromptParts) {
    this.texts = new Array<string>(request.n).fill('');
    this.toolCalls = Array.from({ length: request.n }, () => new Map<number, OpenToolCall>());
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
      // vLLM and others report a failure during generation as an `error` event on a 200 stream; its
      // message is redacted as a non-2xx answer's is (readUpstreamError).
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
        // Logprobs ride on the text they belong to; a chunk without text has none worth relaying.
        const logprobs = logprobsOf(choice);
        events.push(
          logprobs === null
            ? { type: 'delta', choice: index, text: delta.content }
            : { type: 'delta', choice: index, text: delta.content, logprobs },
        );
      }
      if (delta.tool_calls !== undefined && delta.tool_calls !== null) {
        this.readToolCalls(index, delta.tool_calls, events);
      }
      if (typeof choice.finish_reason === 'string') {
        this.finished[index] = true;
        const reason = finishReasonOf(choice.finish_reason);
        // vLLM names the stop string that ended the choice in `stop_reason` (a number is a stop token).
        const stopSequence =
          reason === 'stop' && typeof choice.stop_reason === 'string' ? choice.stop_reason : null;
        events.push(
          stopSequence === null
            ? { type: 'finish', choice: index, reason }
            : { type: 'finish', choice: index, reason, stopSequence },
        );
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
   * `delta.tool_calls` (or a whole message's `tool_calls`, which have no `index`: their position is
   * theirs). The first piece of a call must name it (`id`, `function.name`); `function.arguments`, when
   * present, is a string fragment, relayed as it comes.
   */
  private readToolCalls(choice: number, toolCalls: unknown, events: ChatInferenceEvent[]): void {
    if (!Array.isArray(toolCalls)) throw upstreamProtocolError('sent tool_calls that are not a list');
    const calls = this.toolCalls[choice]!;
    toolCalls.forEach((piece: unknown, position) => {
      if (!isObject(piece)) throw upstreamProtocolError('sent a tool call that is not an object');
      const upstreamIndex = piece.index ?? position;
      if (!isCount(upstreamIndex)) throw upstreamProtocolError('sent a tool call without a valid index');
      const fn = piece.function ?? {};
      if (!isObject(fn)) throw upstreamProtocolError('sent a tool call whose function is not an object');
      let call = calls.get(upstreamIndex);
      if (call === undefined) {
        if (
          typeof piece.id !== 'string' ||
          piece.id === '' ||
          typeof fn.name !== 'string' ||
          fn.name === ''
        ) {
          throw upstreamProtocolError(
            `sent a piece of tool call ${upstreamIndex} before the call's id and function name`,
          );
        }
        call = { index: calls.size, argumentsText: '', name: fn.name };
        calls.set(upstreamIndex, call);
        events.push({ type: 'tool-call-start', choice, index: call.index, id: piece.id, name: fn.name });
      }
      const fragment = fn.arguments;
      if (fragment === undefined || fragment === null) return;
      if (typeof fragment !== 'string') {
        throw upstreamProtocolError('sent tool call arguments that are not a string');
      }
      if (fragment.length === 0) return;
      call.argumentsText += fragment;
      events.push({ type: 'tool-call-arguments', choice, index: call.index, fragment });
    });
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

  /**
   * The stream ended: finishes for choices the upstream left open, then usage (always last). Without the
   * upstream's usage, the texts are counted here, in slices, so a long answer (base64, minified JSON) does
   * not hold the event loop; `signal` cuts the counting short.
   */
  async end(signal?: AbortSignal): Promise<ChatInferenceEvent[]> {
    const open = this.finished.flatMap((finished, index) => (finished ? [] : [index]));
    if (!this.done && open.length > 0) throw upstreamProtocolError('ended the stream before it was complete');
    const missing = this.seen.filter((seen) => !seen).length;
    if (missing > 0) {
      throw upstreamProtocolError(
        `returned ${this.request.n - missing} of ${this.request.n} choices (it may not support n)`,
      );
    }
    const events: ChatInferenceEvent[] = open.map((choice) => ({ type: 'finish', choice, reason: 'stop' }));
    events.push({ type: 'usage', ...(this.usage ?? (await this.countUsage(new TimeSlicer(signal)))) });
    return events;
  }

  private async countUsage(slicer: TimeSlicer): Promise<{ promptTokens: number; completionTokens: number }> {
    const promptTokens = await countPromptTokensInSlices(this.request, slicer);
    let completionTokens = 0;
    for (const text of this.texts) completionTokens += await countTextTokensInSlices(text, slicer);
    for (const calls of this.toolCalls) {
      for (const call of calls.values()) {
        completionTokens +=
          (await countTextTokensInSlices(call.name, slicer)) +
          (await countTextTokensInSlices(call.argumentsText, slicer));
      }
    }
    return { promptTokens, completionTokens };
  }
}
