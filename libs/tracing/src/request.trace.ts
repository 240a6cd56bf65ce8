import { context, SpanStatusCode, trace, type Context } from '@opentelemetry/api';
import { GEN_AI, MGW, type GenAiOperation } from './gen-ai.attributes';
import { TRACER_NAME } from './job.trace';
import { tracingEnabled } from './trace-context';

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

/** Names the request on its server span as the gateway queues a job for it. */
export function annotateRequest(parent: Context | undefined, request: QueuedRequest): void {
  const span = parent && trace.getSpan(parent);
  if (span === undefined) return;
  span.setAttributes({
    [GEN_AI.operationName]: request.operation,
    [GEN_AI.requestModel]: request.model,
    [MGW.fallbackHops]: request.fallbackHops,
    [MGW.resumable]: request.resumable,
    ...(request.keyId !== undefined && { [MGW.keyId]: request.keyId }),
    ...(request.batchId !== undefined && { [MGW.batchId]: request.batchId }),
  });
}

/** A stream resumed on this gateway (`x-stream-resume`): its server span says so. */
export function annotateResumed(parent: Context | undefined, requestId: string, model: string): void {
  const span = parent && trace.getSpan(parent);
  span?.setAttributes({
    [MGW.resumed]: true,
    [MGW.requestId]: requestId,
    [GEN_AI.requestModel]: model,
  });
}

/**
 * The trace ids of a request for a log line written outside its context (the gateway relaying a worker's
 * replies): empty when it is not traced.
 */
export function traceFieldsOf(parent: Context | undefined): { trace_id?: string; span_id?: string } {
  const span = parent && trace.getSpanContext(parent);
  return span === undefined ? {} : { trace_id: span.traceId, span_id: span.spanId };
}
