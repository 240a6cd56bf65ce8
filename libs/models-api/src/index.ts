export * from './models-api.module';
