export * from './logger.factory';
export * from './process-lifecycle';
export * from './metrics/metric-names';
