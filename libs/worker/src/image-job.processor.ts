import type { Job } from 'bullmq';
import { ImageJobData, imageResultKeyFor } from '@mgw/contracts';
import { toImageInferenceRequest, type ImageBackend, type SlotLease } from '@mgw/inference';
import type { JobOutcome, JobRunner } from './job-runner';
import { failedBeforeOutputWithFallback, type UsageReporter } from './usage.reporter';

/**
 * Runs image jobs of one model. Each PNG is stored under a short-lived key and referenced from the
 * `image` message, so multi-megabyte payloads never pass through pub/sub.
 */
export class ImageJobProcessor {
  constructor(
    private readonly model: string,
    private readonly backend: ImageBackend,
    private readonly runner: JobRunner,
    private readonly namespace: string,
    private readonly resultTtlMs: number,
    private readonly usage: UsageReporter,
  ) {}

  process(job: Job<unknown>, reserved: SlotLease | null = null): Promise<JobOutcome> {
    return this.runner.run(job, ImageJobData, this.model, async ({ data, signal, writer }) => {
      const request = toImageInferenceRequest(data.request);
      let count = 0;
      try {
        for await (const image of this.backend.generate(request, signal, reserved)) {
          const key = imageResultKeyFor(this.namespace, data.requestId, image.index);
          await writer.sendWithPayload(
            { kind: 'image', index: image.index, key, revisedPrompt: image.revisedPrompt },
            key,
            image.png.toString('base64'),
            this.resultTtlMs,
          );
          count++;
        }
        signal.throwIfAborted();
        if (count !== request.n) throw new Error(`the backend produced ${count} of ${request.n} images`);
      } catch (error) {
        if (failedBeforeOutputWithFallback(data, signal, count)) throw error; // see ChatJobProcessor
        await this.usage.report(data, { promptTokens: 0, completionTokens: 0, images: count });
        throw error;
      }
      // Counted before the client hears the end: same connection, sent first (see ChatJobProcessor).
      const recorded = this.usage.report(data, { promptTokens: 0, completionTokens: 0, images: count });
      await writer.send({ kind: 'image-done', count });
      await recorded;
    });
  }
}
