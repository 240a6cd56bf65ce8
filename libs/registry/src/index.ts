export * from './worker.directory';
export * from './registry.controller';
export * from './registry-server.module';
export * from './registry.client';
export * from './model.directory';
export * from './worker.announcer';
export * from './registry-metrics.exporter';
export * from './registry.transport';
