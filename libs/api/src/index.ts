export * from './api.module';
export * from './chat/chat-chunk.serializer';
export * from './chat/completion.assembler';
export * from './gateway.app';
export * from './openapi/openapi.document';
export * from './openapi/docs-page';
