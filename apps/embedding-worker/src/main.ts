import './tracing';
import 'reflect-metadata';
import { bootstrapWorker } from '@mgw/worker';

bootstrapWorker('embedding', process.env);
