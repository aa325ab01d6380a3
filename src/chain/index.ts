import type { Config } from '../config/config.js';
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { ChainBackend } from './backend.js';
import { createEmbeddedBackend } from './embedded/backend.js';
import type { GenesisHook } from './embedded/programs.js';
import { createRpcBackend } from './rpc/backend.js';
import { loadKeypairFile } from './rpc/payerFile.js';

export type { ChainBackend, ChainProbe, Commitment, SignatureStatus } from './backend.js';
export type { EmbeddedBackend } from './embedded/backend.js';
export type { GenesisAccount, GenesisHook } from './embedded/programs.js';
export { createEmbeddedBackend } from './embedded/backend.js';
export { createRpcBackend } from './rpc/backend.js';
export { deriveLaunchKeys, type LaunchKeys } from './keys.js';
export { sendIdempotent, type IdempotentSend } from './send.js';
export { requiredPrograms, stepExecutors } from './steps/index.js';

/**
 * Builds the configured backend: embedded (LiteSVM persisted in `db`) when no RPC URL is set,
 * otherwise RPC with the payer from SOLANA_PAYER_KEYPAIR.
 */
export async function createChainBackend(deps: {
  config: Config;
  db: Db;
  clock: Clock;
  logger: Logger;
  genesisHooks?: GenesisHook[];
}): Promise<ChainBackend> {
  const { config, db, clock, logger } = deps;
  const fees = { priorityFeeMicroLamports: config.chain.priorityFeeMicroLamports, computeUnitLimit: config.chain.computeUnitLimit };
  if (config.chain.mode === 'rpc' && config.chain.rpcUrl !== undefined) {
    if (config.chain.payerKeypairPath === undefined) throw new Error('SOLANA_PAYER_KEYPAIR is required with SOLANA_RPC_URL');
    const payer = loadKeypairFile(config.chain.payerKeypairPath);
    return createRpcBackend({ rpcUrl: config.chain.rpcUrl, payer, fees, clock, logger });
  }
  return createEmbeddedBackend({
    db,
    secretKey: config.secretKey,
    clock,
    logger,
    programsDir: config.chain.programsDir,
    genesisHooks: deps.genesisHooks,
  });
}
