/**
 * `npm run chain`: the embedded chain alone, as a local cluster (docs/chain.md). Its state lives in its
 * own SQLite file (`DATA_DIR/chain.sqlite`, or CHAIN_DATA_FILE), so several service processes and
 * tests can share one chain through SOLANA_RPC_URL. Serves JSON-RPC on CHAIN_RPC_HOST:CHAIN_RPC_PORT
 * (127.0.0.1:8899) and PubSub on the same port and the next one; loads CHAIN_PROGRAMS_DIR.
 * Prints `chain rpc <url>` once serving; SIGTERM/SIGINT close it cleanly.
 */
import { join, resolve } from 'node:path';
import { createChainBackend } from '../src/app/serviceChain.js';
import type { EmbeddedBackend } from '../src/chain/embedded/backend.js';
import { startChainRpcServer } from '../src/chain/embedded/rpcServer.js';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { migrateToLatest, openDatabase } from '../src/db/database.js';
import { systemClock } from '../src/lib/clock.js';
import { createLogger } from '../src/lib/logger.js';

async function main(): Promise<void> {
  const env = { ...process.env, SOLANA_RPC_URL: '', SOLANA_PAYER_KEYPAIR: '' };
  const config = loadConfig(env);
  if (config.chain.rpcServer === undefined) throw new ConfigError('CHAIN_RPC_PORT', 'is off (or NODE_ENV is production): npm run chain has nothing to serve');
  const logger = createLogger({ level: config.logLevel, pretty: config.logPretty });
  const file = process.env.CHAIN_DATA_FILE ? resolve(process.env.CHAIN_DATA_FILE) : join(config.dataDir, 'chain.sqlite');
  const database = openDatabase(file);
  await migrateToLatest(database.db);
  // The same embedded chain the service builds (programs directory, genesis accounts), on its own file.
  const chain = (await createChainBackend(config, { db: database.db, clock: systemClock, logger })) as EmbeddedBackend;
  const server = await startChainRpcServer({ chain, host: config.chain.rpcServer.host, port: config.chain.rpcServer.port, logger });
  process.stdout.write(`chain rpc ${server.url}\n`);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void server
      .close()
      .then(() => chain.close())
      .then(() => database.close())
      .then(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/** A one-line explanation of a failed bind naming the variable to change, as the service gives; undefined for other errors. */
function bindFailure(error: unknown): string | undefined {
  const { code, port, address } = (error ?? {}) as NodeJS.ErrnoException & { port?: number; address?: string };
  const where = `${address ?? process.env.CHAIN_RPC_HOST ?? '127.0.0.1'}`;
  // PubSub takes the port after CHAIN_RPC_PORT: either may be the taken one.
  if (code === 'EADDRINUSE') return `Port ${port ?? '?'} on ${where} is already in use (another validator, or a service serving its local cluster there): stop the process using it or set CHAIN_RPC_PORT to a free port (PubSub takes the next one too).`;
  if (code === 'EACCES') return `Port ${port ?? '?'} needs privileges this process does not have: set CHAIN_RPC_PORT to a port above 1023.`;
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `CHAIN_RPC_HOST=${where} is not an address of this machine: set CHAIN_RPC_HOST to one of its addresses (127.0.0.1 for local use).`;
  return undefined;
}

main().catch((error: unknown) => {
  process.stderr.write(`${bindFailure(error) ?? (error instanceof Error ? error.message : String(error))}\n`);
  process.exit(1);
});
