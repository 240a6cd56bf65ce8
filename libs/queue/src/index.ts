export * from './redis-connection.factory';
export * from './job-options';
export * from './job.producer';
export * from './reply.router';
export * from './reply.publisher';
export * from './cancel.listener';
export * from './model-queue.consumer';
export * from './queue-stats.reader';
