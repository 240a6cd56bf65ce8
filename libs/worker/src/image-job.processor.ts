import { Inject, Injectable } from '@nestjs/common';
import type { Job } from 'bullmq';
import { WorkerConfig } from '@mgw/config';
import { imageResultKeyFor } from '@mgw/contracts';
import { readImageJob } from '@mgw/request';
import { toImageInferenceRequest } from '@mgw/inference';
import { JobRunner, type JobOutcome } from './job-runner';
import { OnJob } from './on-job.decorator';
import { ServedBackends } from './served-backends';
import { failedBeforeOutputWithFallback, UsageReporter } from './usage.reporter';

/** An image job, its request neutral (`readImageJob`). */
const IMAGE_JOB_READER = { read: readImageJob };

/**
 * Runs image jobs on their model's backend. Each PNG is stored under a short-lived key and referenced from the
 * `image` message, so multi-megabyte payloads never pass through pub/sub.
 */
@Injectable()
export class ImageJobProcessor {
  constructor(
    @Inject(JobRunner) private readonly runner: JobRunner,
    @Inject(UsageReporter) private readonly usage: UsageReporter,
    @Inject(ServedBackends) private readonly backends: Pick<ServedBackends, 'image'>,
    @Inject(WorkerConfig) private readonly config: Pick<WorkerConfig, 'namespace' | 'imageResultTtlMs'>,
  ) {}

  @OnJob('image')
  process(job: Job<unknown>, model: string): Promise<JobOutcome> {
    const backend = this.backends.image(model);
    return this.runner.run(job, IMAGE_JOB_READER, model, async ({ data, signal, writer }) => {
      const request = toImageInferenceRequest(data.request);
      const imageSize = data.request.size;
      let count = 0;
      try {
        for await (const image of backend.generate(request, signal)) {
          const key = imageResultKeyFor(this.config.namespace, data.requestId, image.index);
          await writer.sendWithPayload(
            { kind: 'image', index: image.index, key, revisedPrompt: image.revisedPrompt },
            key,
            image.png.toString('base64'),
            this.config.imageResultTtlMs,
          );
          count++;
        }
        signal.throwIfAborted();
        if (count !== request.n) throw new Error(`the backend produced ${count} of ${request.n} images`);
      } catch (error) {
        if (failedBeforeOutputWithFallback(data, signal, count)) throw error; // see ChatJobProcessor
        await this.usage.report(data, { promptTokens: 0, completionTokens: 0, images: count, imageSize });
        throw error;
      }
      // Counted before the client hears the end: same connection, sent first (see ChatJobProcessor).
      const recorded = this.usage.report(data, {
        promptTokens: 0,
        completionTokens: 0,
        images: count,
        imageSize,
      });
      await writer.send({ kind: 'image-done', count });
      await recorded;
    });
  }
}
