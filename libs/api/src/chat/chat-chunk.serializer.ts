import { createHash } from 'node:crypto';
import type { ChatDoneMessage, CompletionUsage, FinishReason, TokenUsage } from '@mgw/contracts';

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

  /** An intermediate chunk; the first one of each choice also carries the assistant role, as OpenAI's does. */
  delta(choice: number, content: string): string {
    const role = this.roleSent.has(choice) ? '' : '"role":"assistant",';
    this.roleSent.add(choice);
    return `${this.head}{"index":${choice},"delta":{${role}"content":${JSON.stringify(content)}},"logprobs":null,"finish_reason":null}]}`;
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
