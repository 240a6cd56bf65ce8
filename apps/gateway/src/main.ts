import './tracing';
import 'reflect-metadata';
import { createGatewayApp, listenGateway } from '@mgw/api';
import { loadGatewayConfig } from '@mgw/config';
import { createAppLogger, exitIfShutdownStalls, runApp } from '@mgw/observability';
import { GatewayModule } from './gateway.module';

runApp('gateway', async () => {
  const config = loadGatewayConfig(process.env);
  const logger = createAppLogger('gateway', config);
  const app = await createGatewayApp(GatewayModule.forRoot(config), config, logger);
  app.enableShutdownHooks();
  // Room for the announced delay, the drain and the final flush; past it the process exits rather than hang.
  exitIfShutdownStalls('gateway', config.shutdownDelayMs + config.drainTimeoutMs + 15_000);
  const [api, operator] = await listenGateway(app, config);
  logger.log(`listening on ${api}${operator ? `; operator routes (/admin, /metrics) on ${operator}` : ''}`);
  if (config.generatedDevKey) {
    logger.warn(
      `no GATEWAY_API_KEYS set: generated a development key for this run: ${config.generatedDevKey}`,
    );
  }
});
