import {
  context,
  isSpanContextValid,
  ROOT_CONTEXT,
  trace,
  TraceFlags,
  type Context,
  type SpanContext,
} from '@opentelemetry/api';
import { TRACEPARENT_PATTERN } from '@mgw/contracts';

/**
 * Whether this process exports traces, and whether spans may carry prompts and completions. Set once by
 * `startTracing` before anything else runs; while it is off, every helper here returns at its first line,
 * so a process without an OTLP endpoint pays one boolean test per call site.
 */
const state = { enabled: false, captureMessageContent: false };

export function tracingEnabled(): boolean {
  return state.enabled;
}

export function capturesMessageContent(): boolean {
  return state.captureMessageContent;
}

/** For `startTracing` (and specs) only. */
export function setTracingState(enabled: boolean, captureMessageContent: boolean): void {
  state.enabled = enabled;
  state.captureMessageContent = enabled && captureMessageContent;
}

/** The span context as a `traceparent` header value. */
export function traceparentOf(span: SpanContext): string {
  const flags = (span.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${span.traceId}-${span.spanId}-${flags}`;
}

/**
 * The remote span context a `traceparent` names, or null for a malformed one or the all-zero ids the W3C
 * format declares invalid. Only version 00 is written here, so only 00 is read: a job's field comes from a
 * gateway of this code base.
 */
export function spanContextOf(traceparent: string): SpanContext | null {
  if (!TRACEPARENT_PATTERN.test(traceparent)) return null;
  const [, traceId, spanId, flags] = traceparent.split('-') as [string, string, string, string];
  const span: SpanContext = {
    traceId,
    spanId,
    traceFlags: parseInt(flags, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  return isSpanContextValid(span) ? span : null;
}

/** The `traceparent` of the span active here, to carry a trace across the queue; undefined when off. */
export function activeTraceparent(): string | undefined {
  if (!state.enabled) return undefined;
  const span = trace.getSpanContext(context.active());
  return span && isSpanContextValid(span) ? traceparentOf(span) : undefined;
}

/** The context a job continues: its gateway's span as the remote parent, or a new trace without one. */
export function contextOfTraceparent(traceparent: string | undefined): Context {
  const span = traceparent === undefined ? null : spanContextOf(traceparent);
  return span === null ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, span);
}

/** The ids a log line written here carries, so a line leads to its trace (`trace_id`, `span_id`). */
export function activeTraceFields(): { trace_id: string; span_id: string } | undefined {
  if (!state.enabled) return undefined;
  const span = trace.getSpanContext(context.active());
  return span && isSpanContextValid(span) ? { trace_id: span.traceId, span_id: span.spanId } : undefined;
}

/**
 * Runs `work` in the trace a job's raw data names (its `traceparent`, not yet validated: a malformed one
 * names none), so the lines logged about the job before its spans start carry the trace id too.
 */
export function inJobTrace<T>(traceparent: unknown, work: () => T): T {
  if (!state.enabled || typeof traceparent !== 'string') return work();
  return context.with(contextOfTraceparent(traceparent), work);
}
