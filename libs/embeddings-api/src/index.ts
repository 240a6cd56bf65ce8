export * from './embeddings-api.module';
export * from './embeddings.service';
export * from './embedding-list.renderer';
export * from './embeddings-call';
