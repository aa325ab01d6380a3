/**
 * Composition root: reads the config, builds the service, serves HTTP, and on SIGTERM/SIGINT stops
 * accepting, lets in-flight work finish or release its leases, and closes the database.
 */
import { removeLocalEndpoints, startLocalCluster, writeLocalEndpoints } from '../chain/embedded/localCluster.js';
import { operatorMistake, startService } from './startup.js';

async function main(): Promise<void> {
  const { config, logger, service, server, port } = await startService();
  // Outside production the embedded chain is also a local cluster (docs/chain.md): JSON-RPC for wallets and scripts.
  const localCluster = await startLocalCluster(config.chain.rpcServer, service.chain, logger).catch(async (error: unknown) => {
    server.close();
    await service.stop();
    throw error;
  });
  if (!config.production) {
    writeLocalEndpoints(config.dataDir, {
      serviceUrl: `http://${urlHost(config.host)}:${port}`,
      ...(localCluster ? { rpcUrl: localCluster.url, wsUrl: localCluster.wsUrl } : {}),
      pid: process.pid,
    });
  }
  // Created and printed only once everything is bound, so a start that fails does not lose it.
  const developmentKey = await service.createDevelopmentKey();
  if (developmentKey) {
    // Printed once, on a line of its own, so a newcomer can copy it; only its hash is stored.
    process.stdout.write(`\nDevelopment API key (owner "dev", all scopes) — shown once, keep it:\n${developmentKey.key}\n\n`);
  }
  // The workers start one per event-loop turn (a restart's backlog never holds the port's first answers).
  service.start();
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
    if (!config.production) removeLocalEndpoints(config.dataDir);
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

/** The host part of a URL that reaches `host` from this machine. */
function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

main().catch((error: unknown) => {
  // A mistake of the operator's is told in its own words, on one line (src/app/startup.ts); anything else with its stack.
  const mistake = operatorMistake(error);
  if (mistake) {
    process.stderr.write(`${mistake.line}\n`);
    process.exit(1);
  }
  process.stderr.write(`launch service failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
