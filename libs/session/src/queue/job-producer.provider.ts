import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { GatewayConfig } from '@mgw/config';
import { failedJobsKept, JobProducer } from '@mgw/queue';
import { RedisConnections } from '@mgw/redis';

/** `JobProducer` on the command connection; its queues close at shutdown, before the connection does. */
@Injectable()
export class GatewayJobProducer extends JobProducer implements OnApplicationShutdown {
  constructor(
    @Inject(RedisConnections) redis: RedisConnections,
    @Inject(GatewayConfig) config: GatewayConfig,
  ) {
    super(redis.commands, config.namespace, failedJobsKept(config.keepFailedJobs, config.keepFailedJobBytes));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}
