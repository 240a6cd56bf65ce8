import './tracing';
import 'reflect-metadata';
import { bootstrapWorker } from '@mgw/worker';

bootstrapWorker('image', process.env);
