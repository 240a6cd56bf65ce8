import { ConfigError } from '@mgw/config';

/** The OTLP encodings this gateway exports: protobuf (the OpenTelemetry default) or JSON, both over HTTP. */
export type OtlpProtocol = 'http/protobuf' | 'http/json';

export type TracesSamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

const SAMPLERS: readonly TracesSamplerName[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

/**
 * The environment variables a process's tracing reads: these here, and those the OpenTelemetry SDK reads
 * itself (the exporter's headers, timeout and compression, the batch processor's `OTEL_BSP_*`, resource
 * attributes). Deployment checks use it to tell a setting that is read from a typo.
 */
export const TRACING_ENV_NAMES: readonly string[] = [
  'OTEL_SDK_DISABLED',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  'OTEL_EXPORTER_OTLP_TIMEOUT',
  'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT',
  'OTEL_EXPORTER_OTLP_COMPRESSION',
  'OTEL_EXPORTER_OTLP_TRACES_COMPRESSION',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_BSP_SCHEDULE_DELAY',
  'OTEL_BSP_MAX_QUEUE_SIZE',
  'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
  'OTEL_BSP_EXPORT_TIMEOUT',
  'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT',
];

/** What a process's tracing is, read once from the standard `OTEL_*` variables. */
export interface TracingConfig {
  /** False without an OTLP endpoint (or with `OTEL_SDK_DISABLED=true`): nothing is loaded. */
  enabled: boolean;
  serviceName: string;
  protocol: OtlpProtocol;
  sampler: TracesSamplerName;
  /** The ratio of the `*traceidratio` samplers, 0 to 1. */
  samplerRatio: number;
  /** Prompts and completions are recorded on spans only when the operator says so: they are user data. */
  captureMessageContent: boolean;
}

/**
 * Reads the tracing settings from the standard OpenTelemetry environment: tracing is on when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, and a process is named
 * `OTEL_SERVICE_NAME` or `mgw-<app>`. The exporter itself reads the endpoint and `OTEL_EXPORTER_OTLP_HEADERS`
 * (as every OpenTelemetry SDK does); what is checked here fails the start with a clear message instead of a
 * silently dropped trace.
 */
export function readTracingConfig(env: NodeJS.ProcessEnv, app: string): TracingConfig {
  const problems: string[] = [];
  const endpoint =
    nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) ?? nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT'] as const) {
    const value = nonEmpty(env[name]);
    if (value !== undefined && !isHttpUrl(value))
      problems.push(`${name}: must be an http(s) URL, got "${value}"`);
  }
  const protocol = protocolOf(env, problems);
  const sampler = (nonEmpty(env.OTEL_TRACES_SAMPLER) ?? 'parentbased_always_on') as TracesSamplerName;
  if (!SAMPLERS.includes(sampler))
    problems.push(`OTEL_TRACES_SAMPLER: must be one of ${SAMPLERS.join(', ')}, got "${sampler}"`);
  const samplerRatio = ratioOf(nonEmpty(env.OTEL_TRACES_SAMPLER_ARG), problems);
  const captureMessageContent = flagOf(env, 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT', problems);
  const disabled = flagOf(env, 'OTEL_SDK_DISABLED', problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    enabled: endpoint !== undefined && !disabled,
    serviceName: nonEmpty(env.OTEL_SERVICE_NAME) ?? `mgw-${app}`,
    protocol,
    sampler,
    samplerRatio,
    captureMessageContent,
  };
}

function protocolOf(env: NodeJS.ProcessEnv, problems: string[]): OtlpProtocol {
  const name = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const value = nonEmpty(env[name]) ?? 'http/protobuf';
  if (value === 'http/protobuf' || value === 'http/json') return value;
  problems.push(
    `${name}: must be http/protobuf or http/json (gRPC is not bundled; point it at a collector's HTTP port, 4318), got "${value}"`,
  );
  return 'http/protobuf';
}

function ratioOf(value: string | undefined, problems: string[]): number {
  if (value === undefined) return 1;
  const ratio = Number(value);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    problems.push(`OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1, got "${value}"`);
    return 1;
  }
  return ratio;
}

function flagOf(env: NodeJS.ProcessEnv, name: string, problems: string[]): boolean {
  const value = nonEmpty(env[name])?.toLowerCase();
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  problems.push(`${name}: must be true or false, got "${env[name]}"`);
  return false;
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

function isHttpUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}
