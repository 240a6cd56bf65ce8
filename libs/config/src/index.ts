export * from './load-config';
export * from './deprecated-env';
export * from './shared.config';
export * from './gateway.config';
export * from './worker.config';
export * from './registry.config';
export * from './catalog.loader';
export * from './production-secret.validator';
