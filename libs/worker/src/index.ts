export * from './job-runner';
export * from './chat-job.processor';
export * from './image-job.processor';
export * from './served-models';
export * from './worker.runtime';
export * from './worker.module';
export * from './usage.reporter';
