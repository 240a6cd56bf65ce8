import { createHash } from 'node:crypto';
import type {
  ChatDoneMessage,
  CompletionUsage,
  FinishReason,
  TokenLogprob,
  TokenUsage,
  ToolCallMessage,
} from '@mgw/contracts';

export function completionIdFor(requestId: string): string {
  return `chatcmpl-${requestId}`;
}

const fingerprints = new Map<string, string>();

/** Stable per model; identifies what served the request (OpenAI's `system_fingerprint`). */
export function systemFingerprintFor(model: string): string {
  let fingerprint = fingerprints.get(model);
  if (!fingerprint) {
    fingerprint = `fp_${createHash('sha256').update(`mgw:${model}`).digest('hex').slice(0, 10)}`;
    if (fingerprints.size < 10_000) fingerprints.set(model, fingerprint);
  }
  return fingerprint;
}

export function toCompletionUsage(usage: TokenUsage): CompletionUsage {
  return { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
}

/**
 * Serialises `chat.completion.chunk` events for one stream. The envelope is the same on every chunk,
 * so it is rendered once and only the choice part is serialised per token.
 */
export class ChatChunkSerializer {
  private readonly head: string;
  private readonly roleSent = new Set<number>();

  constructor(requestId: string, model: string, created: number) {
    const envelope = {
      id: completionIdFor(requestId),
      object: 'chat.completion.chunk',
      created,
      model,
      system_fingerprint: systemFingerprintFor(model),
    };
    this.head = `${JSON.stringify(envelope).slice(0, -1)},"choices":[`;
  }

  /**
   * An intermediate chunk; the first one of each choice also carries the assistant role, as OpenAI's does.
   * With `logprobs` (the request asked for them), the chunk carries those of its tokens.
   */
  delta(choice: number, content: string, logprobs?: readonly TokenLogprob[]): string {
    const role = this.roleSent.has(choice) ? '' : '"role":"assistant",';
    this.roleSent.add(choice);
    const probabilities =
      logprobs === undefined ? 'null' : `{"content":${JSON.stringify(logprobs)},"refusal":null}`;
    return `${this.head}{"index":${choice},"delta":{${role}"content":${JSON.stringify(content)}},"logprobs":${probabilities},"finish_reason":null}]}`;
  }

  /**
   * The role-only chunk OpenAI opens a choice with when logprobs were asked (`content: ""`, no tokens yet),
   * or null when the choice has already started. Clients that seed a choice from its first chunk (the
   * openai SDK's stream accumulator) count the first tokens' logprobs twice unless that chunk has none.
   */
  opening(choice: number): string | null {
    if (this.roleSent.has(choice)) return null;
    this.roleSent.add(choice);
    return `${this.head}{"index":${choice},"delta":{"role":"assistant","content":""},"logprobs":{"content":[],"refusal":null},"finish_reason":null}]}`;
  }

  /**
   * A chunk with one piece of a tool call (`delta.tool_calls[]`). The first piece of a call carries its id,
   * `type` and function name, with the arguments so far (`""` if none yet); later pieces carry fragments of
   * `function.arguments` only, which clients concatenate. A choice that starts with a tool call gets the
   * role, and `content: null`, on that chunk.
   */
  toolCall(message: ToolCallMessage): string {
    const { choice, index } = message;
    const role = this.roleSent.has(choice) ? '' : '"role":"assistant","content":null,';
    this.roleSent.add(choice);
    const args = JSON.stringify(message.arguments);
    const call =
      message.id === undefined
        ? `{"index":${index},"function":{"arguments":${args}}}`
        : `{"index":${index},"id":${JSON.stringify(message.id)},"type":"function","function":{"name":${JSON.stringify(message.name ?? '')},"arguments":${args}}}`;
    return `${this.head}{"index":${choice},"delta":{${role}"tool_calls":[${call}]},"logprobs":null,"finish_reason":null}]}`;
  }

  /** The final chunk: empty deltas, every choice's finish reason, and usage. */
  final(done: ChatDoneMessage): string {
    const choices = done.finishReasons.map((reason: FinishReason, index) => ({
      index,
      delta: {},
      logprobs: null,
      finish_reason: reason,
    }));
    return `${this.head}${JSON.stringify(choices).slice(1)},"usage":${JSON.stringify(toCompletionUsage(done.usage))}}`;
  }
}
