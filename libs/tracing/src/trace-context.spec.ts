import { context, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  activeTraceFields,
  activeTraceparent,
  contextOfTraceparent,
  setTracingState,
  spanContextOf,
  traceparentOf,
} from './trace-context';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN_ID = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${SPAN_ID}-01`;

describe('trace context across the queue', () => {
  afterEach(() => {
    setTracingState(false, false);
    context.disable();
  });

  it('writes and reads a W3C traceparent', () => {
    const span = spanContextOf(TRACEPARENT);
    expect(span).toEqual({
      traceId: TRACE_ID,
      spanId: SPAN_ID,
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    });
    expect(traceparentOf(span!)).toBe(TRACEPARENT);
    expect(traceparentOf({ ...span!, traceFlags: TraceFlags.NONE })).toBe(`00-${TRACE_ID}-${SPAN_ID}-00`);
  });

  it('refuses malformed and all-zero ids', () => {
    expect(spanContextOf('00-xyz')).toBeNull();
    expect(spanContextOf(`01-${TRACE_ID}-${SPAN_ID}-01`)).toBeNull();
    expect(spanContextOf(`00-${TRACE_ID.toUpperCase()}-${SPAN_ID}-01`)).toBeNull();
    expect(spanContextOf(`00-${'0'.repeat(32)}-${SPAN_ID}-01`)).toBeNull();
    expect(spanContextOf(`00-${TRACE_ID}-${'0'.repeat(16)}-01`)).toBeNull();
  });

  it('continues a job in its gateway’s trace, or none without one', () => {
    expect(trace.getSpanContext(contextOfTraceparent(TRACEPARENT))?.traceId).toBe(TRACE_ID);
    expect(contextOfTraceparent(undefined)).toBe(ROOT_CONTEXT);
    expect(contextOfTraceparent('garbage')).toBe(ROOT_CONTEXT);
  });

  it('carries nothing while tracing is off, even inside a span context', () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    context.with(contextOfTraceparent(TRACEPARENT), () => {
      expect(activeTraceparent()).toBeUndefined();
      expect(activeTraceFields()).toBeUndefined();
    });
  });

  it('carries the active span’s context while tracing is on', () => {
    setTracingState(true, false);
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    expect(activeTraceparent()).toBeUndefined();
    context.with(contextOfTraceparent(TRACEPARENT), () => {
      expect(activeTraceparent()).toBe(TRACEPARENT);
      expect(activeTraceFields()).toEqual({ trace_id: TRACE_ID, span_id: SPAN_ID });
    });
  });
});
