export * from './redis-script';
