import { context, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import { GEN_AI, MGW, type GenAiOperation } from './gen-ai.attributes';
import { TRACER_NAME } from './job.trace';
import { contextOfTraceparent, spanContextOf, tracingEnabled } from './trace-context';

/**
 * The trace context of a request, taken where the gateway starts serving it (its server span is active
 * there): a fallback is admitted and queued from a worker's reply, where no request's context is active.
 * Undefined when tracing is off.
 */
export function requestTraceContext(): Context | undefined {
  return tracingEnabled() ? context.active() : undefined;
}

/**
 * The admission of a request for a model (its key's limits and scheduling holds) as a span of its own under
 * the request's server span; `admit` runs as it would without tracing.
 */
export function traceAdmission<T>(
  parent: Context | undefined,
  model: string,
  admit: () => Promise<T>,
): Promise<T> {
  if (parent === undefined) return admit();
  const options = { attributes: { [GEN_AI.requestModel]: model } };
  return trace.getTracer(TRACER_NAME).startActiveSpan('admission', options, parent, async (span) => {
    try {
      return await admit();
    } catch (error) {
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: error instanceof Error ? error.message : String(error),
      });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** What the gateway knows of a request as it queues a job for it. */
export interface QueuedRequest {
  operation: GenAiOperation;
  /** The model this job asks for (a fallback's, after a hop). */
  model: string;
  keyId?: string;
  /** Models tried before this one. */
  fallbackHops: number;
  resumable: boolean;
  batchId?: string;
}

/**
 * Names the request on its server span as the gateway queues a job for it. The model asked for stays the
 * request's model; a fallback's job names the model it went to apart.
 */
export function annotateRequest(parent: Context | undefined, request: QueuedRequest): void {
  const span = parent && trace.getSpan(parent);
  if (span === undefined) return;
  span.setAttributes({
    [GEN_AI.operationName]: request.operation,
    [request.fallbackHops === 0 ? GEN_AI.requestModel : MGW.fallbackModel]: request.model,
    [MGW.fallbackHops]: request.fallbackHops,
    [MGW.resumable]: request.resumable,
    ...(request.keyId !== undefined && { [MGW.keyId]: request.keyId }),
    ...(request.batchId !== undefined && { [MGW.batchId]: request.batchId }),
  });
}

/**
 * A model that could not serve the request hands it to its next fallback: an event on the server span,
 * between the attempts' spans (each job's inference span holds its own outcome and error).
 */
export function traceFallback(parent: Context | undefined, from: string, to: string, reason: string): void {
  const span = parent && trace.getSpan(parent);
  span?.addEvent('mgw.fallback', {
    [MGW.fallbackFrom]: from,
    [MGW.fallbackTo]: to,
    [MGW.fallbackReason]: reason,
  });
}

/** The resume of a stream on this gateway, in the stream's own trace; `end` closes its span. */
export interface ResumeTrace {
  end(error?: string): void;
}

const NO_RESUME_TRACE: ResumeTrace = { end: () => undefined };

/**
 * A stream resumed on this gateway (`GET …?stream=true`): its server span says so. The resuming request
 * is a trace of its own (its client's), while the stream's job runs in the trace of the request that
 * started it, maybe on another gateway (the stream's meta carries that request's `traceparent`). The two
 * are tied both ways: the server span links to the original request's span, and a `stream resume <model>`
 * span in the original trace, from the resume until its replay reaches the live stream, links back.
 */
export function traceResumed(
  parent: Context | undefined,
  requestId: string,
  model: string,
  originalTraceparent: string | undefined,
): ResumeTrace {
  const server = parent && trace.getSpan(parent);
  if (server === undefined) return NO_RESUME_TRACE;
  server.setAttributes({
    [MGW.resumed]: true,
    [MGW.requestId]: requestId,
    [GEN_AI.requestModel]: model,
  });
  const original = originalTraceparent === undefined ? null : spanContextOf(originalTraceparent);
  if (original === null) return NO_RESUME_TRACE;
  server.addLink({ context: original });
  const span: Span = trace.getTracer(TRACER_NAME).startSpan(
    `stream resume ${model}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: { [MGW.resumed]: true, [MGW.requestId]: requestId, [GEN_AI.requestModel]: model },
      links: [{ context: server.spanContext() }],
    },
    contextOfTraceparent(originalTraceparent),
  );
  return {
    end: (error?: string) => {
      if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
      span.end();
    },
  };
}

/**
 * The trace ids of a request for a log line written outside its context (the gateway relaying a worker's
 * replies): empty when it is not traced.
 */
export function traceFieldsOf(parent: Context | undefined): { trace_id?: string; span_id?: string } {
  const span = parent && trace.getSpanContext(parent);
  return span === undefined ? {} : { trace_id: span.traceId, span_id: span.spanId };
}
