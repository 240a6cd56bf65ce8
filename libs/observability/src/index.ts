export * from './logger.factory';
export * from './process-lifecycle';
