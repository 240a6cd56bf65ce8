import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { shutdownTracing } from './tracing.bootstrap';

/**
 * Exports the spans still buffered when the app stops. A provider of each app's root module, listed last:
 * Nest runs the root module's shutdown hooks after those of the modules it imports, so the spans of the
 * drain are ended by then.
 */
@Injectable()
export class TracingShutdown implements OnApplicationShutdown {
  async onApplicationShutdown(): Promise<void> {
    await shutdownTracing();
  }
}
