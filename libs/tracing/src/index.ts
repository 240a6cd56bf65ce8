export * from './tracing.config';
export * from './trace-context';
export * from './tracing.bootstrap';
export * from './tracing.shutdown';
export * from './gen-ai.attributes';
export * from './job.trace';
export * from './request.trace';
