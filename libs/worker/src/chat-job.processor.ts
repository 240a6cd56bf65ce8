import { Inject, Injectable } from '@nestjs/common';
import type { Job } from 'bullmq';
import { GatewayError, toolCallHeadProblem, type FinishReason, type TokenUsage } from '@mgw/contracts';
import { readChatJob } from '@mgw/request';
import type { ChatBackend } from '@mgw/inference';
import { estimatePromptTokens } from '@mgw/access';
import { JobRunner, type JobOutcome } from './job-runner';
import { OnJob } from './on-job.decorator';
import { ServedBackends } from './served-backends';
import { batchLineEndedPartWay, failedBeforeOutputWithFallback, UsageReporter } from './usage.reporter';

/** A chat job of any version, its request neutral (`readChatJob`). */
const CHAT_JOB_READER = { read: readChatJob };

/**
 * Runs chat jobs on their model's backend: the backend's events become `delta` and `tool-call` messages and
 * one `chat-done`. A count-only job (`countOnly`) is answered by the backend's prompt count alone, in a
 * `chat-done` with no choices.
 */
@Injectable()
export class ChatJobProcessor {
  constructor(
    @Inject(JobRunner) private readonly runner: JobRunner,
    @Inject(UsageReporter) private readonly usage: UsageReporter,
    @Inject(ServedBackends) private readonly backends: Pick<ServedBackends, 'chat'>,
  ) {}

  @OnJob('chat')
  process(job: Job<unknown>, model: string): Promise<JobOutcome> {
    const backend: ChatBackend = this.backends.chat(model);
    return this.runner.run(job, CHAT_JOB_READER, model, async ({ data, signal, writer }) => {
      const { request } = data;
      if (data.countOnly === true) {
        // Counting is not generating: no output, and no usage recorded (a count costs the key no tokens).
        const promptTokens = await backend.countPromptTokens(request, signal);
        signal.throwIfAborted();
        await writer.send({
          kind: 'chat-done',
          finishReasons: [],
          usage: { prompt_tokens: promptTokens, completion_tokens: 0 },
        });
        return;
      }
      const finishReasons: (FinishReason | undefined)[] = new Array<FinishReason | undefined>(request.n);
      /** The stop sequence that ended choice 0, when the backend says (the Messages API answers it). */
      let stopSequence: string | null = null;
      let usage: TokenUsage | null = null;
      // Tokens sent so far, for the usage of a job that stops early: a delta with logprobs knows its token
      // count; otherwise a delta, a tool call's name and each fragment of its arguments count as one.
      let produced = 0;
      try {
        for await (const event of backend.generate(request, signal)) {
          switch (event.type) {
            case 'delta': {
              const logprobs = request.logprobs ? event.logprobs : undefined;
              if (logprobs !== undefined && (event.text.length > 0 || logprobs.length > 0)) {
                produced += Math.max(1, logprobs.length);
                await writer.send({ kind: 'delta', choice: event.choice, content: event.text, logprobs });
              } else if (event.text.length > 0) {
                produced++;
                await writer.send({ kind: 'delta', choice: event.choice, content: event.text });
              }
              break;
            }
            case 'tool-call-start': {
              const problem = toolCallHeadProblem(event.id, event.name);
              if (problem !== null) {
                throw GatewayError.workerFailed(
                  `The model backend produced a tool call that cannot be relayed: ${problem}.`,
                );
              }
              produced++;
              await writer.send({
                kind: 'tool-call',
                choice: event.choice,
                index: event.index,
                id: event.id,
                name: event.name,
                arguments: '',
              });
              break;
            }
            case 'tool-call-arguments':
              if (event.fragment.length > 0) {
                produced++;
                await writer.send({
                  kind: 'tool-call',
                  choice: event.choice,
                  index: event.index,
                  arguments: event.fragment,
                });
              }
              break;
            case 'finish':
              finishReasons[event.choice] = event.reason;
              if (event.choice === 0 && event.stopSequence !== undefined) stopSequence = event.stopSequence;
              break;
            case 'usage':
              usage = { prompt_tokens: event.promptTokens, completion_tokens: event.completionTokens };
              break;
          }
        }
        signal.throwIfAborted();
      } catch (error) {
        // A failure before any output that the gateway answers by a fallback model is not this model's to
        // count: the serving model records the request (same request id, counted once). Nor is a batch
        // line's part-way run: its finished run counts.
        if (failedBeforeOutputWithFallback(data, signal, produced) || batchLineEndedPartWay(data)) {
          throw error;
        }
        // Stopped early (client gone, deadline, backend failure): what was generated still counts. Without
        // the backend's final count, what was sent is counted as above and the prompt is estimated.
        await this.usage.report(data, {
          promptTokens: usage?.prompt_tokens ?? estimatePromptTokens(request.messages),
          completionTokens: usage?.completion_tokens ?? produced,
          images: 0,
        });
        throw error;
      }
      const reasons = [...finishReasons];
      if (usage === null || reasons.length !== request.n || reasons.some((r) => r === undefined)) {
        throw new Error('the backend ended without finishing every choice and reporting usage');
      }
      // Recorded before the client hears the end, so a finished response is always already counted — without
      // waiting a round trip for it: the usage script goes out first on the connection that then publishes
      // the end, and Redis runs one connection's commands in order.
      const recorded = this.usage.report(data, {
        promptTokens: usage.prompt_tokens,
        completionTokens: usage.completion_tokens,
        images: 0,
      });
      await writer.send({
        kind: 'chat-done',
        finishReasons: reasons as FinishReason[],
        usage,
        ...(stopSequence !== null && { stopSequence }),
      });
      await recorded;
    });
  }
}
