export * from './connections/connections.module';
export * from './connections/pubsub.dispatcher';
export * from './connections/redis-connection.factory';
export * from './connections/redis-connections.provider';
export * from './record-store/bounded-record.store';
export * from './redis-script';
export * from './slots/slot.keeper';
export * from './slots/slot.scripts';
