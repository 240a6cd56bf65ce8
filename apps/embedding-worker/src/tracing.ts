import 'reflect-metadata';
import { startTracingOrExit } from '@mgw/tracing';

// main.ts's first import: the HTTP and ioredis instrumentations must see those modules load.
startTracingOrExit('embedding-worker', process.env);
