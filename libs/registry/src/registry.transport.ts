import { ClientRedis, ServerRedis } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import type { RedisSettings } from '@mgw/config';
import { createRedisConnection } from '@mgw/redis';

/** Nest logs the transport's connection errors itself (its own listener); ours would say them twice. */
const LOGGED_BY_NEST = { warn: () => undefined };

/**
 * What the transport logs of a connection error: one line, its message. Nest's own listener logs the whole
 * error object on every reconnect attempt (stack and the failed command included); the logger's redaction
 * (`err.command.args`, libs/observability) is what keeps a refused `HELLO … AUTH` password out of any log.
 */
function errorMessageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The registry's Nest transport, on the deployment's Redis whatever its topology: Nest's Redis transport
 * builds a plain ioredis client from host and port, which cannot follow a Sentinel promotion nor a Cluster.
 * These keep Nest's protocol (patterns, packets, reply channels) and only take their two connections from
 * the one connection factory. Its messages are classic PUBLISH, which a Cluster delivers on every node.
 */
export class RegistryTransportServer extends ServerRedis {
  constructor(private readonly settings: RedisSettings) {
    super({});
  }

  override createRedisClient(): Promise<Redis> {
    return Promise.resolve(
      createRedisConnection(this.settings, 'subscriber', 'registry:transport', LOGGED_BY_NEST, {
        lazyConnect: true,
      }),
    );
  }

  override registerErrorListener(client: Redis): void {
    client.on('error', (error: unknown) => {
      this.logger.error(`registry transport: ${errorMessageOf(error)}`);
    });
  }
}

export interface RegistryTransportClientOptions {
  redis: RedisSettings;
  /** The connections' name in CLIENT LIST. */
  name: string;
}

/** The callers' side of `RegistryTransportServer` (gateway and workers); a Nest `customClass` client. */
export class RegistryTransportClient extends ClientRedis {
  constructor(private readonly transport: RegistryTransportClientOptions) {
    super({});
  }

  override createClient(): Promise<Redis> {
    const { redis, name } = this.transport;
    return Promise.resolve(
      createRedisConnection(redis, 'subscriber', name, LOGGED_BY_NEST, { lazyConnect: true }),
    );
  }

  override registerErrorListener(client: Redis): void {
    client.on('error', (error: unknown) => this.logger.error(`registry client: ${errorMessageOf(error)}`));
  }
}
