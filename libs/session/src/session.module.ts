import { Module, type DynamicModule } from '@nestjs/common';
import { KeyAuthenticator, KeyStore, TeamStore, UsageReader } from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import { GatewayMetrics } from '@mgw/observability';
import { JobProducer, ReplyRouter } from '@mgw/queue';
import { ConnectionsModule } from '@mgw/redis';
import { ModelDirectory, RegistryClient } from '@mgw/registry';
import { accessProviders } from './admission/access.providers';
import { AdmissionService } from './admission/admission.service';
import { KeyInvalidationListener } from './admission/key-invalidation.listener';
import { GatewayShutdown } from './lifecycle/gateway-shutdown';
import { GatewayRegistryClient, modelDirectoryProvider } from './models/gateway-registry.client';
import { ModelResolver } from './models/model.resolver';
import { ControlPublisher } from './queue/control.publisher';
import { GatewayJobProducer } from './queue/job-producer.provider';
import { GatewayReplyRouter } from './queue/reply-router.provider';
import { RequestSessions } from './request-sessions';
import { StreamLogStore } from './resume/stream-log.store';
import { StreamResumer } from './resume/stream-resumer.service';

/**
 * The request core: what every front-end's request goes through — model resolution, admission against the
 * key's limits, the job and its replies (the session), resume, the drain — on this gateway's connections.
 * Imported by the features; it imports the connections, so those start first and stop last.
 */
@Module({})
export class SessionModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: SessionModule,
      // Global, and one object per config: the assembly imports it once and every room sees the same
      // request core (one set of sessions, one reply router, one set of connections).
      global: true,
      imports: [ConnectionsModule.forRoot(config)],
      providers: [
        { provide: GatewayMetrics, useValue: new GatewayMetrics() },
        { provide: JobProducer, useClass: GatewayJobProducer },
        { provide: ReplyRouter, useClass: GatewayReplyRouter },
        { provide: RegistryClient, useClass: GatewayRegistryClient },
        modelDirectoryProvider,
        ControlPublisher,
        ...accessProviders,
        KeyInvalidationListener,
        AdmissionService,
        ModelResolver,
        StreamLogStore,
        RequestSessions,
        StreamResumer,
        GatewayShutdown,
      ],
      exports: [
        ConnectionsModule,
        GatewayMetrics,
        ReplyRouter,
        ModelDirectory,
        KeyStore,
        TeamStore,
        UsageReader,
        KeyAuthenticator,
        AdmissionService,
        ModelResolver,
        RequestSessions,
        StreamLogStore,
        StreamResumer,
        GatewayShutdown,
      ],
    };
  }
}
