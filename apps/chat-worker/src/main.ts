import './tracing';
import 'reflect-metadata';
import { bootstrapWorker } from '@mgw/worker';

bootstrapWorker('chat', process.env);
