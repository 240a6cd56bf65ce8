export * from './chat-api.module';
export * from './chat-chunk.serializer';
export * from './completion.assembler';
