import {
  Inject,
  Injectable,
  type OnApplicationShutdown,
  type OnModuleInit,
  type Provider,
} from '@nestjs/common';
import { GatewayConfig } from '@mgw/config';
import { ModelDirectory, RegistryClient } from '@mgw/registry';

/** `RegistryClient` (its own transport connection): connected at start, closed at shutdown. */
@Injectable()
export class GatewayRegistryClient extends RegistryClient implements OnModuleInit, OnApplicationShutdown {
  constructor(@Inject(GatewayConfig) config: GatewayConfig) {
    super(config.redis, config.namespace);
  }

  async onModuleInit(): Promise<void> {
    await this.connect();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}

/** The registry's models, cached: what requests are resolved against and `/v1/models` lists. */
export const modelDirectoryProvider: Provider = {
  provide: ModelDirectory,
  useFactory: (registry: RegistryClient, config: GatewayConfig) =>
    new ModelDirectory(registry, {
      timeoutMs: config.registryTimeoutMs,
      freshMs: config.registryCacheMs,
      staleMs: config.registryStaleMs,
    }),
  inject: [RegistryClient, GatewayConfig],
};
