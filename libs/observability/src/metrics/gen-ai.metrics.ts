import { performance } from 'node:perf_hooks';
import { Histogram, type Registry } from 'prom-client';
import { INTER_TOKEN_BUCKETS_SECONDS, LATENCY_BUCKETS_SECONDS } from './buckets';
import { GEN_AI_METRICS } from './metric-names';

/** The conventions' advised buckets for token counts: powers of 4 up to 64 Mi. */
const TOKEN_BUCKETS = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
];

type GenAiLabel = 'gen_ai_operation_name' | 'gen_ai_request_model';

/** What a job's GenAI metrics read of the replies it sends. */
export interface GenAiReply {
  kind: string;
  usage?: { prompt_tokens: number; completion_tokens: number };
  finishReasons?: readonly unknown[];
}

/**
 * The GenAI semantic conventions' metrics of a worker, labelled as the conventions name their attributes:
 * time to the first token and per output token of each generation (from the worker taking the job), and
 * the tokens of each request by type (input, output).
 */
export class GenAiMetrics {
  readonly timeToFirstToken: Histogram<GenAiLabel>;
  readonly timePerOutputToken: Histogram<GenAiLabel>;
  readonly tokenUsage: Histogram<GenAiLabel | 'gen_ai_token_type'>;

  constructor(registry: Registry) {
    const registers = [registry];
    const labelNames: GenAiLabel[] = ['gen_ai_operation_name', 'gen_ai_request_model'];
    this.timeToFirstToken = new Histogram({
      name: GEN_AI_METRICS.timeToFirstToken,
      help: 'GenAI semconv: time from a worker taking a generation to its first output.',
      labelNames,
      buckets: LATENCY_BUCKETS_SECONDS,
      registers,
    });
    this.timePerOutputToken = new Histogram({
      name: GEN_AI_METRICS.timePerOutputToken,
      help: 'GenAI semconv: time per output token after the first, per generation.',
      labelNames,
      buckets: INTER_TOKEN_BUCKETS_SECONDS,
      registers,
    });
    this.tokenUsage = new Histogram({
      name: GEN_AI_METRICS.tokenUsage,
      help: 'GenAI semconv: tokens per request, by type (input, output).',
      labelNames: [...labelNames, 'gen_ai_token_type'],
      buckets: TOKEN_BUCKETS,
      registers,
    });
  }

  /** Watches one job's replies; `operation` is its `gen_ai.operation.name`, `model` a bounded label. */
  observerFor(operation: string, model: string): { onSend(message: GenAiReply): void } {
    const labels = { gen_ai_operation_name: operation, gen_ai_request_model: model };
    const takenAt = performance.now();
    let firstAt = 0;
    return {
      onSend: (message) => {
        switch (message.kind) {
          case 'delta':
          case 'tool-call':
            if (firstAt === 0) {
              firstAt = performance.now();
              this.timeToFirstToken.observe(labels, (firstAt - takenAt) / 1000);
            }
            return;
          case 'chat-done': {
            // A count-only job's answer (no choices) generated nothing.
            if (message.usage === undefined || message.finishReasons?.length === 0) return;
            const { prompt_tokens: input, completion_tokens: output } = message.usage;
            this.usage(labels, input, output);
            if (firstAt !== 0 && output > 1)
              this.timePerOutputToken.observe(labels, (performance.now() - firstAt) / 1000 / (output - 1));
            return;
          }
          case 'embedding-done':
            if (message.usage) this.usage(labels, message.usage.prompt_tokens, null);
            return;
        }
      },
    };
  }

  private usage(labels: Record<GenAiLabel, string>, input: number, output: number | null): void {
    this.tokenUsage.observe({ ...labels, gen_ai_token_type: 'input' }, input);
    if (output !== null) this.tokenUsage.observe({ ...labels, gen_ai_token_type: 'output' }, output);
  }
}
