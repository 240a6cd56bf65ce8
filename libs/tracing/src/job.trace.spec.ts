import { context, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { JobTrace, recordUpstreamAddress } from './job.trace';
import { requestTraceContext, traceAdmission } from './request.trace';
import { setTracingState } from './trace-context';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const GATEWAY_SPAN = '00f067aa0ba902b7';
const JOB = {
  requestId: 'req-0123456789',
  model: 'up-chat',
  traceparent: `00-${TRACE_ID}-${GATEWAY_SPAN}-01`,
  keyId: 'key_0123456789abcdef01234567',
  request: { messages: [{ role: 'user', content: 'a secret prompt' }], temperature: 0.5, max_tokens: 9 },
};

describe('JobTrace', () => {
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

  /** One job: queued 40 ms ago, a first delta, its end, run under its span. */
  async function runJob(): Promise<void> {
    const traced = JobTrace.start(JOB, 'chat', Date.now() - 40)!;
    await traced.run(async () => {
      recordUpstreamAddress('http://vllm.internal:8000');
      traced.onSend({ kind: 'delta', content: 'an ' });
      traced.onSend({ kind: 'delta', content: 'answer' });
      traced.onSend({
        kind: 'chat-done',
        usage: { prompt_tokens: 7, completion_tokens: 2 },
        finishReasons: ['stop'],
      });
      await Promise.resolve();
    });
    traced.end('completed');
  }

  it('is nothing while tracing is off', () => {
    expect(JobTrace.start(JOB, 'chat', Date.now())).toBeNull();
    expect(spans()).toEqual([]);
  });

  it('continues the gateway’s trace: the queue wait, then the inference with its GenAI attributes', async () => {
    setTracingState(true, false);
    await runJob();
    const wait = named('queue wait up-chat');
    const inference = named('chat up-chat');
    for (const span of [wait, inference]) {
      expect(span.spanContext().traceId).toBe(TRACE_ID);
      expect(span.parentSpanContext?.spanId).toBe(GATEWAY_SPAN);
    }
    expect(wait.attributes['mgw.queue.wait_ms']).toBeGreaterThanOrEqual(40);
    expect(inference.kind).toBe(SpanKind.CONSUMER);
    expect(inference.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'up-chat',
      'gen_ai.response.model': 'up-chat',
      'gen_ai.request.temperature': 0.5,
      'gen_ai.request.max_tokens': 9,
      'gen_ai.usage.input_tokens': 7,
      'gen_ai.usage.output_tokens': 2,
      'gen_ai.response.finish_reasons': ['stop'],
      'server.address': 'vllm.internal',
      'server.port': 8000,
      'mgw.key_id': JOB.keyId,
      'mgw.job.outcome': 'completed',
    });
    expect(inference.events.map((event) => event.name)).toEqual(['gen_ai.first_output']);
    expect(JSON.stringify(spans().map((span) => span.attributes))).not.toContain('secret');
  });

  it('records the prompt and the completion only when told to', async () => {
    setTracingState(true, true);
    await runJob();
    const inference = named('chat up-chat');
    expect(JSON.parse(inference.attributes['gen_ai.input.messages'] as string)).toEqual(JOB.request.messages);
    expect(JSON.parse(inference.attributes['gen_ai.output.messages'] as string)).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'an answer' }] },
    ]);
  });

  it('gives the admission a span of its own under the request’s span', async () => {
    setTracingState(true, false);
    const server = trace.getTracer('spec').startSpan('POST');
    const parent = context.with(trace.setSpan(context.active(), server), () => requestTraceContext());
    await expect(traceAdmission(parent, 'up-chat', () => Promise.resolve(3))).resolves.toBe(3);
    await expect(
      traceAdmission(parent, 'up-chat', () => Promise.reject(new Error('limited'))),
    ).rejects.toThrow('limited');
    const admissions = spans().filter((span) => span.name === 'admission');
    expect(admissions).toHaveLength(2);
    for (const span of admissions) expect(span.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
    expect(admissions[1]!.status.code).toBe(2);
    await expect(traceAdmission(undefined, 'up-chat', () => Promise.resolve(4))).resolves.toBe(4);
    expect(spans().filter((span) => span.name === 'admission')).toHaveLength(2);
  });
});
