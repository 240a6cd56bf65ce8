import type { ChatCompletion, ChatDoneMessage } from '@mgw/contracts';
import { completionIdFor, systemFingerprintFor, toCompletionUsage } from './chat-chunk.serializer';

/** Collects a non-streaming request's deltas into the `chat.completion` object. */
export class CompletionAssembler {
  private readonly parts: string[][] = [];

  constructor(
    private readonly requestId: string,
    private readonly model: string,
    private readonly created: number,
  ) {}

  add(choice: number, content: string): void {
    (this.parts[choice] ??= []).push(content);
  }

  finish(done: ChatDoneMessage): ChatCompletion {
    return {
      id: completionIdFor(this.requestId),
      object: 'chat.completion',
      created: this.created,
      model: this.model,
      system_fingerprint: systemFingerprintFor(this.model),
      choices: done.finishReasons.map((reason, index) => ({
        index,
        message: { role: 'assistant', content: (this.parts[index] ?? []).join('') },
        logprobs: null,
        finish_reason: reason,
      })),
      usage: toCompletionUsage(done.usage),
    };
  }
}
