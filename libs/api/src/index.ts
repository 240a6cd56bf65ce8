export * from './api.module';
export * from './gateway.app';
