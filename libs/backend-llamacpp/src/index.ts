export * from './llamacpp.options';
export * from './llamacpp-chat.backend';
export * from './llamacpp-embedding.backend';
