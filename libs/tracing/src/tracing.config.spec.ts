import { ConfigError } from '@mgw/config';
import { readTracingConfig } from './tracing.config';

describe('readTracingConfig', () => {
  it('is off without an OTLP endpoint, named after the app', () => {
    expect(readTracingConfig({}, 'gateway')).toEqual({
      enabled: false,
      serviceName: 'mgw-gateway',
      protocol: 'http/protobuf',
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
      captureMessageContent: false,
    });
  });

  it('is on with either endpoint variable, honouring the standard settings', () => {
    expect(
      readTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, 'chat-worker').enabled,
    ).toBe(true);
    const config = readTracingConfig(
      {
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector:4318/v1/traces',
        OTEL_SERVICE_NAME: 'edge-gateway',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.1',
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'TRUE',
      },
      'gateway',
    );
    expect(config).toEqual({
      enabled: true,
      serviceName: 'edge-gateway',
      protocol: 'http/json',
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.1,
      captureMessageContent: true,
    });
  });

  it('prefers the traces-specific protocol, and stays off when the SDK is disabled', () => {
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    };
    expect(readTracingConfig(env, 'registry').protocol).toBe('http/json');
    expect(readTracingConfig({ ...env, OTEL_SDK_DISABLED: 'true' }, 'registry').enabled).toBe(false);
  });

  it('fails the start with every problem named', () => {
    const read = () =>
      readTracingConfig(
        {
          OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
          OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
          OTEL_TRACES_SAMPLER: 'sometimes',
          OTEL_TRACES_SAMPLER_ARG: '1.5',
          OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'yes',
        },
        'gateway',
      );
    expect(read).toThrow(ConfigError);
    try {
      read();
    } catch (error) {
      const problems = (error as ConfigError).problems.join('\n');
      expect(problems).toContain('OTEL_EXPORTER_OTLP_ENDPOINT: must be an http(s) URL');
      expect(problems).toContain('OTEL_EXPORTER_OTLP_PROTOCOL: must be http/protobuf or http/json');
      expect(problems).toContain('OTEL_TRACES_SAMPLER: must be one of');
      expect(problems).toContain('OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1');
      expect(problems).toContain('OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: must be true or false');
    }
  });
});
