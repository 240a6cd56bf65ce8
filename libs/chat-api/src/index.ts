export * from './chat-api.module';
export * from './chat-completions.service';
export * from './chat-request.pipe';
export * from './chat-chunk.serializer';
export * from './completion.assembler';
