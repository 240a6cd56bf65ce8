export * from './images-api.module';
