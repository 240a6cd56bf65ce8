export * from './redis-script';
export * from './record-store/bounded-record.store';
