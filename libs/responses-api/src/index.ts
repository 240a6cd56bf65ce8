export * from './responses-api.module';
export * from './responses-request.schema';
export * from './responses.service';
export * from './chat-request.translator';
export * from './response-output';
export * from './response-events.renderer';
export * from './response-json.renderer';
export * from './responses.types';
