import type { Provider } from '@nestjs/common';
import { KeyAuthenticator, KeyStore, Limiter, TeamStore, UsageReader } from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import { RedisConnections } from '@mgw/redis';

/** Keys, teams, usage and limits, each on the command connection. */
export const accessProviders: Provider[] = [
  {
    provide: KeyStore,
    useFactory: (redis: RedisConnections, config: GatewayConfig) =>
      new KeyStore(redis.commands, config.namespace),
    inject: [RedisConnections, GatewayConfig],
  },
  {
    provide: TeamStore,
    useFactory: (redis: RedisConnections, config: GatewayConfig) =>
      new TeamStore(redis.commands, config.namespace),
    inject: [RedisConnections, GatewayConfig],
  },
  {
    provide: UsageReader,
    useFactory: (redis: RedisConnections, config: GatewayConfig) =>
      new UsageReader(redis.commands, config.namespace),
    inject: [RedisConnections, GatewayConfig],
  },
  {
    provide: KeyAuthenticator,
    useFactory: (keys: KeyStore, config: GatewayConfig) =>
      new KeyAuthenticator(keys, config.apiKeys, {
        ttlMs: config.keyCacheMs,
        maxEntries: config.keyCacheMax,
      }),
    inject: [KeyStore, GatewayConfig],
  },
  {
    provide: Limiter,
    useFactory: (redis: RedisConnections, config: GatewayConfig) =>
      new Limiter(redis.commands, config.namespace, config.concurrencySlotTtlMs),
    inject: [RedisConnections, GatewayConfig],
  },
];
