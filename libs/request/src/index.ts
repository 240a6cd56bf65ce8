export * from './chat-request';
export * from './param-origins';
export * from './chat-body.mapper';
export * from './chat-request.reader';
export * from './chat-request.rules';
export * from './chat-request.parameters';
export * from './job-data';
