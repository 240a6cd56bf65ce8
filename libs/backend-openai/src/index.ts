export * from './openai.options';
export * from './openai-chat.backend';
export * from './openai-image.backend';
export * from './openai-embedding.backend';
