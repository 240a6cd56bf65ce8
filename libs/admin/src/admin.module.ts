import { Module } from '@nestjs/common';
import { GatewayConfig } from '@mgw/config';
import { RedisConnections } from '@mgw/redis';
import { ModelDirectory } from '@mgw/registry';
import { AdminKeysController } from './admin-keys.controller';
import { AdminModelsController } from './admin-models.controller';
import { AdminTeamsController } from './admin-teams.controller';
import { AdminUsageController } from './admin-usage.controller';
import { HealthController } from './health/health.controller';
import { MetricsController } from './health/metrics.controller';
import { ModelStatusReader } from './model-status.reader';

/**
 * What an operator reaches: the probes (`/healthz`, `/readyz`), the admin API (keys, usage, model status)
 * behind the admin token (keys, and a team's own, also behind its team admin token), and `/metrics`.
 */
@Module({
  controllers: [
    HealthController,
    AdminKeysController,
    AdminTeamsController,
    AdminUsageController,
    AdminModelsController,
    MetricsController,
  ],
  providers: [
    {
      provide: ModelStatusReader,
      useFactory: (redis: RedisConnections, config: GatewayConfig, directory: ModelDirectory) =>
        new ModelStatusReader(redis.commands, config.namespace, directory),
      inject: [RedisConnections, GatewayConfig, ModelDirectory],
    },
  ],
})
export class AdminModule {}
