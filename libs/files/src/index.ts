export * from './file-catalog';
