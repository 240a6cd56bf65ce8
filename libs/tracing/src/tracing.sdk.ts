import type { IncomingMessage } from 'node:http';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
} from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { recordUpstreamAddress } from './job.trace';
import type { TracingConfig } from './tracing.config';

/** Probes and scrapes are not requests anyone follows: they would be most of the traces. */
const UNTRACED_PATHS = /^\/(metrics|healthz|readyz|livez|health)(\/|\?|$)/;

/**
 * The OpenTelemetry SDK of one process: a tracer provider exporting over OTLP/HTTP in batches, W3C trace
 * context propagation, context kept in AsyncLocalStorage, and the maintained instrumentations of what the
 * processes speak — incoming HTTP (the gateway's server spans, continuing a client's `traceparent`), undici
 * (the upstream calls, which send `traceparent` on), ioredis (commands made inside a traced request only,
 * not the background polling). Only loaded when tracing is on (see `startTracing`).
 */
export function startSdk(config: TracingConfig): () => Promise<void> {
  const provider = new NodeTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName })),
    sampler: samplerOf(config),
    // The exporter reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT and _HEADERS; the processor OTEL_BSP_*.
    spanProcessors: [
      new BatchSpanProcessor(
        config.protocol === 'http/json' ? new OtlpJsonExporter() : new OtlpProtobufExporter(),
      ),
    ],
  });
  provider.register();
  const unregister = registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request: IncomingMessage) => UNTRACED_PATHS.test(request.url ?? ''),
        requireParentforOutgoingSpans: true,
      }),
      new UndiciInstrumentation({
        requireParentforSpans: true,
        requestHook: (_span, request) => recordUpstreamAddress(request.origin),
      }),
      // The command's name only: a job's arguments are its whole request, prompt included.
      new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
    ],
  });
  return async () => {
    unregister();
    await provider.shutdown();
  };
}

function samplerOf({ sampler, samplerRatio }: TracingConfig): Sampler {
  switch (sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(samplerRatio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(samplerRatio) });
    default: {
      const unhandled: never = sampler;
      throw new Error(`unhandled sampler ${String(unhandled)}`);
    }
  }
}
