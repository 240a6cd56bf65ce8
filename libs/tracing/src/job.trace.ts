import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { GEN_AI, MGW, requestParameterAttributes, type GenAiOperation } from './gen-ai.attributes';
import { capturesMessageContent, contextOfTraceparent, tracingEnabled } from './trace-context';

export const TRACER_NAME = 'model-gateway';

/** What the worker's spans read of a job (structurally the request lib's job envelope and its request). */
export interface TracedJob {
  requestId: string;
  model: string;
  traceparent?: string;
  keyId?: string;
  priority?: number;
  hasFallback?: boolean;
  resume?: unknown;
  request?: unknown;
}

/** What the spans read of a reply a job sends (structurally the queue's outgoing reply). */
export interface TracedReply {
  kind: string;
  content?: string;
  usage?: { prompt_tokens: number; completion_tokens: number };
  finishReasons?: readonly unknown[];
  error?: { type?: string; code?: string | null };
}

/** The job spans that are running, so an upstream call made under one can name its server on it. */
const running = new WeakSet<Span>();

/**
 * One job's spans on a worker, in the trace its gateway started (the job's `traceparent`): the time it
 * waited in the queue, from its enqueue to this worker taking it (a span of its own, timed by the job's
 * `enqueuedAt`), and the inference, a span holding the GenAI attributes that the upstream's HTTP client
 * span (the undici instrumentation's) runs under. Null when tracing is off.
 */
export class JobTrace {
  private firstOutputAt = 0;
  private readonly completion: string[] | null;

  private constructor(
    readonly span: Span,
    readonly context: Context,
    private readonly operation: GenAiOperation,
    /** The model that served the job: the catalog id the worker ran it as. */
    private readonly servedModel: string,
  ) {
    this.completion = capturesMessageContent() && operation === 'chat' ? [] : null;
  }

  /** `queuedAt`: when the job was queued (epoch ms, the gateway's clock), where its queue wait starts. */
  static start(job: TracedJob, operation: GenAiOperation, queuedAt: number): JobTrace | null {
    if (!tracingEnabled()) return null;
    const tracer = trace.getTracer(TRACER_NAME);
    const parent = contextOfTraceparent(job.traceparent);
    const takenAt = Date.now();
    const common = {
      [GEN_AI.operationName]: operation,
      [GEN_AI.requestModel]: job.model,
      [MGW.requestId]: job.requestId,
      ...(job.keyId !== undefined && { [MGW.keyId]: job.keyId }),
    };
    tracer
      .startSpan(
        `queue wait ${job.model}`,
        {
          kind: SpanKind.INTERNAL,
          startTime: Math.min(queuedAt, takenAt),
          attributes: {
            ...common,
            [MGW.queueWaitMs]: Math.max(0, takenAt - queuedAt),
            ...(job.priority !== undefined && { [MGW.jobPriority]: job.priority }),
          },
        },
        parent,
      )
      .end(takenAt);
    const span = tracer.startSpan(
      `${operation} ${job.model}`,
      {
        kind: SpanKind.CONSUMER,
        startTime: takenAt,
        attributes: {
          ...common,
          ...requestParameterAttributes(job.request),
          [MGW.hasFallback]: job.hasFallback === true,
          [MGW.resumable]: job.resume !== undefined,
        },
      },
      parent,
    );
    if (capturesMessageContent()) {
      const messages = (job.request as { messages?: unknown; input?: unknown } | undefined)?.messages;
      if (messages !== undefined) span.setAttribute(GEN_AI.inputMessages, JSON.stringify(messages));
    }
    running.add(span);
    return new JobTrace(span, trace.setSpan(parent, span), operation, job.model);
  }

  /** Runs the inference with the job's span active: what it calls (the upstream) joins the trace. */
  run<T>(work: () => Promise<T>): Promise<T> {
    return context.with(this.context, work);
  }

  /** Sees each reply the job sends: the first output, usage and finish reasons, the completion if kept. */
  onSend(message: TracedReply): void {
    switch (message.kind) {
      case 'delta':
      case 'tool-call':
        if (this.firstOutputAt === 0) {
          this.firstOutputAt = Date.now();
          this.span.addEvent('gen_ai.first_output', this.firstOutputAt);
        }
        if (this.completion !== null && message.content !== undefined) this.completion.push(message.content);
        return;
      case 'chat-done':
        this.span.setAttribute(GEN_AI.responseModel, this.servedModel);
        if (message.usage) this.usage(message.usage);
        if (message.finishReasons)
          this.span.setAttribute(
            GEN_AI.finishReasons,
            message.finishReasons.map((reason) => String(reason)),
          );
        if (this.completion !== null)
          this.span.setAttribute(
            GEN_AI.outputMessages,
            JSON.stringify([
              { role: 'assistant', parts: [{ type: 'text', content: this.completion.join('') }] },
            ]),
          );
        return;
      case 'embedding-done':
      case 'image-done':
        this.span.setAttribute(GEN_AI.responseModel, this.servedModel);
        if (message.usage) this.usage(message.usage);
        return;
      case 'error':
        this.span.setAttribute(GEN_AI.errorType, message.error?.code ?? message.error?.type ?? 'error');
        this.span.setStatus({ code: SpanStatusCode.ERROR });
        return;
    }
  }

  /** Ends the inference span with the job's outcome. */
  end(outcome: string, error?: unknown): void {
    running.delete(this.span);
    this.span.setAttribute(MGW.outcome, outcome);
    if (error !== undefined) {
      this.span.recordException(
        error instanceof Error ? error : { message: typeof error === 'string' ? error : 'failed' },
      );
      this.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    this.span.end();
  }

  private usage(usage: { prompt_tokens: number; completion_tokens: number }): void {
    this.span.setAttribute(GEN_AI.inputTokens, usage.prompt_tokens);
    if (this.operation !== 'embeddings') this.span.setAttribute(GEN_AI.outputTokens, usage.completion_tokens);
  }
}

/**
 * The upstream an HTTP call made under a running job goes to, named on the job's span (`server.address`,
 * `server.port`): the undici instrumentation calls this as it starts the call's client span.
 */
export function recordUpstreamAddress(origin: string): void {
  const span = trace.getActiveSpan();
  if (span === undefined || !running.has(span)) return;
  try {
    const url = new URL(origin);
    span.setAttribute(GEN_AI.serverAddress, url.hostname);
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    span.setAttribute(GEN_AI.serverPort, port);
  } catch {
    // An origin that is not a URL names nothing worth recording.
  }
}

/** The running job span active here (a job's inference), to link a batch it joins; undefined when off. */
export function activeJobSpan(): Span | undefined {
  if (!tracingEnabled()) return undefined;
  const span = trace.getActiveSpan();
  return span !== undefined && running.has(span) ? span : undefined;
}

/**
 * One backend call made for several jobs (an embedding batch): a span of its own, linked to each job's
 * span and each job's span to it, since the call belongs to no single job's trace. `call` runs under it,
 * so the upstream's HTTP client span is its child.
 */
export function traceBatch<T>(
  jobs: readonly (Span | undefined)[],
  inputs: number,
  call: () => Promise<T>,
): Promise<T> {
  const members = jobs.filter((span): span is Span => span !== undefined);
  if (members.length === 0) return call();
  const batch = trace.getTracer(TRACER_NAME).startSpan(
    'embeddings batch',
    {
      kind: SpanKind.INTERNAL,
      attributes: { [GEN_AI.operationName]: 'embeddings', [MGW.batchInputs]: inputs },
      links: members.map((span) => ({ context: span.spanContext() })),
    },
    ROOT_CONTEXT,
  );
  for (const span of members) span.addLink({ context: batch.spanContext() });
  return context.with(trace.setSpan(ROOT_CONTEXT, batch), call).then(
    (result) => {
      batch.end();
      return result;
    },
    (error: unknown) => {
      batch.setStatus({ code: SpanStatusCode.ERROR });
      batch.end();
      throw error;
    },
  );
}
