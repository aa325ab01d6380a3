/**
 * Composition root: reads the config, builds the service, serves HTTP, and on SIGTERM/SIGINT stops
 * accepting, lets in-flight work finish or release its leases, and closes the database.
 */
import { ConfigError, loadConfig } from '../config/config.js';
import { startHttpServer } from '../http/server.js';
import { systemClock } from '../lib/clock.js';
import { createLogger } from '../lib/logger.js';
import { createService } from './service.js';
import { startLocalCluster } from '../chain/embedded/localCluster.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const logger = createLogger({ level: config.logLevel, pretty: config.logPretty });
  const service = await createService(config, { logger, clock: systemClock });
  if (service.developmentKey) {
    // Printed once, on a line of its own, so a newcomer can copy it; only its hash is stored.
    process.stdout.write(
      `\nDevelopment API key (owner "dev", all scopes) — shown once, keep it:\n${service.developmentKey.key}\n\n`,
    );
  }
  // Outside production the embedded chain is also a local cluster (SPEC §10): JSON-RPC for wallets and scripts.
  const localCluster = await startLocalCluster(config.chain.rpcServer, service.chain, logger).catch(async (error: unknown) => {
    await service.stop();
    throw error;
  });
  service.start();
  const { server, port } = await startHttpServer({ fetch: service.app.fetch, port: config.port, hostname: config.host, limits: config.http });
  logger.info({ port, host: config.host, chain: service.chain.kind, env: config.nodeEnv }, 'launch service listening');

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.error('shutdown took too long; exiting');
      process.exit(1);
    }, 25_000);
    force.unref();
    server.close();
    if ('closeIdleConnections' in server) server.closeIdleConnections();
    Promise.resolve(localCluster?.close())
      .then(() => service.stop())
      .then(() => {
        logger.info('stopped cleanly');
        logger.flush?.();
        process.exit(0);
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`launch service failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
