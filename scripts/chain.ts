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

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
