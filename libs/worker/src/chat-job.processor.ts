import type { Job } from 'bullmq';
import { ChatJobData, type FinishReason, type TokenUsage } from '@mgw/contracts';
import { toChatInferenceRequest, type ChatBackend } from '@mgw/inference';
import type { JobOutcome, JobRunner } from './job-runner';

/** Runs chat jobs of one model: the backend's events become `delta` messages and one `chat-done`. */
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
      for await (const event of this.backend.generate(request, signal)) {
        switch (event.type) {
          case 'delta':
            if (event.text.length > 0)
              await writer.send({ kind: 'delta', choice: event.choice, content: event.text });
            break;
          case 'finish':
            finishReasons[event.choice] = event.reason;
            break;
          case 'usage':
            usage = { prompt_tokens: event.promptTokens, completion_tokens: event.completionTokens };
            break;
        }
      }
      signal.throwIfAborted();
      const reasons = [...finishReasons];
      if (usage === null || reasons.length !== request.n || reasons.some((r) => r === undefined)) {
        throw new Error('the backend ended without finishing every choice and reporting usage');
      }
      await writer.send({ kind: 'chat-done', finishReasons: reasons as FinishReason[], usage });
    });
  }
}
