import type { Job } from 'bullmq';
import { ChatJobData, type FinishReason, type TokenUsage } from '@mgw/contracts';
import { toChatInferenceRequest, type ChatBackend } from '@mgw/inference';
import type { JobOutcome, JobRunner } from './job-runner';

/**
 * A non-streaming answer is only read once it is complete, so its deltas need not travel one token per
 * message: they are joined per choice and sent when the choice finishes (or when this much text is waiting,
 * which keeps every pub/sub message small). Streams keep one message per token: that is their spacing.
 */
export const MAX_COALESCED_CHARS = 16_384;

/**
 * Runs chat jobs of one model: the backend's events become `delta` messages and one `chat-done`. For a
 * non-streaming request, a choice's deltas are coalesced (see MAX_COALESCED_CHARS): an 8-token answer costs
 * three messages instead of ten, on the worker, on Redis and on the gateway.
 */
export class ChatJobProcessor {
  constructor(
    private readonly model: string,
    private readonly backend: ChatBackend,
    private readonly runner: JobRunner,
  ) {}

  process(job: Job<unknown>): Promise<JobOutcome> {
    return this.runner.run(job, ChatJobData, this.model, async ({ data, signal, writer }) => {
      const request = toChatInferenceRequest(data.request);
      const finishReasons: (FinishReason | undefined)[] = new Array<FinishReason | undefined>(request.n);
      let usage: TokenUsage | null = null;
      const coalesce = data.request.stream !== true;
      const pending = new Map<number, string>();
      const flush = async (choice: number): Promise<void> => {
        const content = pending.get(choice);
        if (content === undefined) return;
        pending.delete(choice);
        await writer.send({ kind: 'delta', choice, content });
      };
      for await (const event of this.backend.generate(request, signal)) {
        switch (event.type) {
          case 'delta': {
            if (event.text.length === 0) break;
            if (!coalesce) {
              await writer.send({ kind: 'delta', choice: event.choice, content: event.text });
              break;
            }
            const content = (pending.get(event.choice) ?? '') + event.text;
            pending.set(event.choice, content);
            if (content.length >= MAX_COALESCED_CHARS) await flush(event.choice);
            break;
          }
          case 'finish':
            await flush(event.choice);
            finishReasons[event.choice] = event.reason;
            break;
          case 'usage':
            usage = { prompt_tokens: event.promptTokens, completion_tokens: event.completionTokens };
            break;
        }
      }
      for (const choice of [...pending.keys()]) await flush(choice);
      signal.throwIfAborted();
      const reasons = [...finishReasons];
      if (usage === null || reasons.length !== request.n || reasons.some((r) => r === undefined)) {
        throw new Error('the backend ended without finishing every choice and reporting usage');
      }
      await writer.send({ kind: 'chat-done', finishReasons: reasons as FinishReason[], usage });
    });
  }
}
