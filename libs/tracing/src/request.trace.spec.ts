import { context, trace, type Context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { annotateRequest, traceFallback, traceResumed } from './request.trace';
import { setTracingState } from './trace-context';

const ORIGINAL_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const ORIGINAL_SPAN = '00f067aa0ba902b7';
const ORIGINAL = `00-${ORIGINAL_TRACE}-${ORIGINAL_SPAN}-01`;

describe('the request’s spans on the gateway', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

  beforeAll(() => {
    trace.setGlobalTracerProvider(provider);
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  });
  afterAll(() => {
    trace.disable();
    context.disable();
  });
  afterEach(() => {
    exporter.reset();
    setTracingState(false, false);
  });

  const spans = () => exporter.getFinishedSpans();
  const named = (name: string) => spans().find((span) => span.name === name)!;

  /** A server span as the HTTP instrumentation starts it, and its context. */
  function serverSpan(): { end: () => void; context: Context } {
    setTracingState(true, false);
    const span = trace.getTracer('test').startSpan('POST');
    return { end: () => span.end(), context: trace.setSpan(context.active(), span) };
  }

  it('keeps the model asked for as the request’s and names each fallback hop apart', () => {
    const server = serverSpan();
    const request = { operation: 'chat' as const, fallbackHops: 0, resumable: false };
    annotateRequest(server.context, { ...request, model: 'up-broken' });
    traceFallback(server.context, 'up-broken', 'up-chat', 'failed');
    annotateRequest(server.context, { ...request, model: 'up-chat', fallbackHops: 1 });
    server.end();

    const span = named('POST');
    expect(span.attributes).toMatchObject({
      'gen_ai.request.model': 'up-broken',
      'mgw.fallback.model': 'up-chat',
      'mgw.fallback.hops': 1,
    });
    expect(span.events.map(({ name, attributes }) => ({ name, attributes }))).toEqual([
      {
        name: 'mgw.fallback',
        attributes: {
          'mgw.fallback.from': 'up-broken',
          'mgw.fallback.to': 'up-chat',
          'mgw.fallback.reason': 'failed',
        },
      },
    ]);
  });

  it('links a resume to the stream’s original trace both ways', () => {
    const server = serverSpan();
    traceResumed(server.context, 'req-1', 'sim-chat', ORIGINAL).end();
    server.end();

    const resumed = named('POST');
    expect(resumed.attributes).toMatchObject({ 'mgw.stream.resumed': true, 'mgw.request_id': 'req-1' });
    expect(resumed.links.map((link) => link.context.spanId)).toEqual([ORIGINAL_SPAN]);
    const resume = named('stream resume sim-chat');
    expect(resume.spanContext().traceId).toBe(ORIGINAL_TRACE);
    expect(resume.parentSpanContext?.spanId).toBe(ORIGINAL_SPAN);
    expect(resume.links.map((link) => link.context.spanId)).toEqual([resumed.spanContext().spanId]);
  });

  it('marks a resume without the original’s trace (an older gateway’s meta) and writes nothing more', () => {
    const server = serverSpan();
    traceResumed(server.context, 'req-1', 'sim-chat', undefined).end();
    server.end();

    expect(spans().map((span) => span.name)).toEqual(['POST']);
    expect(named('POST').links).toEqual([]);
    expect(named('POST').attributes['mgw.stream.resumed']).toBe(true);
  });

  it('is nothing while tracing is off', () => {
    traceResumed(undefined, 'req-1', 'sim-chat', ORIGINAL).end();
    traceFallback(undefined, 'a', 'b', 'failed');
    expect(spans()).toEqual([]);
  });
});
