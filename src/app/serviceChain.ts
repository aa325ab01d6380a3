import { join } from 'node:path';
import { PublicKey } from '@solana/web3.js';
import type { Logger } from 'pino';
import type { ChainBackend } from '../chain/backend.js';
import { createEmbeddedBackend } from '../chain/embedded/backend.js';
import { createRpcBackend } from '../chain/rpc/backend.js';
import { loadKeypairFile } from '../chain/rpc/payerFile.js';
import { cpmmGenesisHook } from '../chain/programs/cpmm/genesis.js';
import { CPMM_MAINNET_PROGRAM_ID, DEFAULT_PROGRAM_IDS } from '../chain/programs/programIds.js';
import { requiredPrograms, stepExecutors } from '../chain/steps/index.js';
import type { RequiredProgram, StepExecutor, StepName } from '../chain/steps/types.js';
import type { Config } from '../config/config.js';
import type { Db } from '../db/database.js';
import { planFromRequest } from '../launches/plan.js';
import { storedRequest, type LaunchRequest } from '../launches/request.js';
import type { Clock } from '../lib/clock.js';

/** The configured chain backend: embedded LiteSVM unless SOLANA_RPC_URL is set. */
export async function createChainBackend(config: Config, deps: { db: Db; clock: Clock; logger: Logger }): Promise<ChainBackend> {
  const fees = { priorityFeeMicroLamports: config.chain.priorityFeeMicroLamports, computeUnitLimit: config.chain.computeUnitLimit };
  if (config.chain.mode === 'rpc' && config.chain.rpcUrl && config.chain.payerKeypairPath) {
    return createRpcBackend({ rpcUrl: config.chain.rpcUrl, payer: loadKeypairFile(config.chain.payerKeypairPath), fees, clock: deps.clock, logger: deps.logger });
  }
  return createEmbeddedBackend({
    db: deps.db,
    secretKey: config.secretKey,
    clock: deps.clock,
    logger: deps.logger,
    programsDir: config.chain.programsDir,
    // CHAIN_CLONE_FROM: the steps' programs it lacks come from that cluster, cached under DATA_DIR.
    clone: config.chain.cloneFrom ? { sourceUrl: config.chain.cloneFrom, programIds: Object.values(DEFAULT_PROGRAM_IDS), cacheDir: join(config.dataDir, 'programs') } : undefined,
    // Accounts the pool program needs before its first pool (an AmmConfig and its fee receiver).
    genesisHooks: [cpmmGenesisHook(CPMM_MAINNET_PROGRAM_ID)],
  });
}

/** The programs a request needs that are not executable on the chain (docs/api.md capability check). */
export async function checkCapabilities(chain: ChainBackend, request: LaunchRequest): Promise<RequiredProgram[]> {
  const plan = planFromRequest('capability-check', storedRequest(request));
  const needed = requiredPrograms(plan);
  const present = await Promise.all(needed.map((program) => chain.isProgramExecutable(new PublicKey(program.programId))));
  return needed.filter((_, i) => !present[i]);
}

/** Step executors by name. */
export function stepExecutorsFor(): Partial<Record<StepName, StepExecutor>> {
  return stepExecutors;
}
