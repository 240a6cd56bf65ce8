export * from './api-docs';
export * from './api-docs.decorators';
export * from './docs-page';
export * from './examples';
export * from './json-schema.types';
export * from './openapi.document';
