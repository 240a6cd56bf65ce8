export * from './file-catalog';
export * from './files.module';
export * from './upload/multipart-route';
