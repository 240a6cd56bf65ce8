export * from './simulator.options';
export * from './chat-simulator.backend';
export * from './image-simulator.backend';
export * from './embedding-simulator.backend';
