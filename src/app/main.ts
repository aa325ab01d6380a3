/**
 * Composition root: reads the config, builds the service, serves HTTP, and on SIGTERM/SIGINT stops
 * accepting, lets in-flight work finish or release its leases, and closes the database.
 */
import { ProgramFileError } from '../chain/embedded/programs.js';
import { ConfigError, loadConfig } from '../config/config.js';
import { DatabaseLockedError } from '../db/writerLock.js';
import { systemClock } from '../lib/clock.js';
import { NonRetriableError } from '../lib/retry.js';
import { createLogger } from '../lib/logger.js';
import { serveService } from './serve.js';
import { createService } from './service.js';
import { removeLocalEndpoints, startLocalCluster, writeLocalEndpoints } from '../chain/embedded/localCluster.js';

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
  let listening;
  try {
    listening = await serveService(service, { port: config.port, hostname: config.host, limits: config.http });
  } catch (error) {
    await service.stop().catch(() => undefined);
    const reason = bindFailure(error, config.port, config.host);
    if (reason === undefined) throw error;
    process.stderr.write(`${reason}\n`);
    process.exit(1);
  }
  const { server, port } = listening;
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

/** A one-line explanation of a failed bind that names the variable to change; undefined for other errors. */
function bindFailure(error: unknown, port: number, host: string): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE') return `Port ${port} on ${host} is already in use: stop the process using it or set PORT to a free port.`;
  if (code === 'EACCES') return `Port ${port} needs privileges this process does not have: set PORT to a port above 1023.`;
  if (code === 'EADDRNOTAVAIL') return `HOST=${host} is not an address of this machine: set HOST to one of its addresses (127.0.0.1 for local use).`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') return `HOST=${host} cannot be resolved to an address: set HOST to an address of this machine (127.0.0.1 for local use) or a name that resolves to one.`;
  return undefined;
}

main().catch((error: unknown) => {
  // A mistake of the operator's is told in its own words; anything else with its stack.
  // A payer keypair file that cannot be read (SOLANA_PAYER_KEYPAIR) is such a mistake too.
  const badSetting = error instanceof NonRetriableError && error.code === 'invalid_configuration';
  if (error instanceof ConfigError || error instanceof ProgramFileError || error instanceof DatabaseLockedError || badSetting) {
    process.stderr.write(`launch service failed to start: ${error.message}\n`);
    process.exit(1);
  }
  process.stderr.write(`launch service failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
