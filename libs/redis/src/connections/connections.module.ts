import { Logger, Module, type DynamicModule } from '@nestjs/common';
import { GatewayConfig } from '@mgw/config';
import { PubSubDispatcher } from './pubsub.dispatcher';
import { RedisConnections } from './redis-connections.provider';

/**
 * The config and the Redis connections, in a module of their own: Nest starts imported modules first and
 * stops them last, so the connections are ready before anything subscribes and close after every user
 * (job queues, the registry client) has closed.
 */
@Module({})
export class ConnectionsModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: ConnectionsModule,
      providers: [
        { provide: GatewayConfig, useValue: config },
        RedisConnections,
        {
          provide: PubSubDispatcher,
          useFactory: (redis: RedisConnections) =>
            new PubSubDispatcher(redis.subscriber, new Logger('Gateway')),
          inject: [RedisConnections],
        },
      ],
      exports: [GatewayConfig, RedisConnections, PubSubDispatcher],
    };
  }
}
