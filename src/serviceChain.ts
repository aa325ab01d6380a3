import { PublicKey } from '@solana/web3.js';
import type { Logger } from 'pino';
import type { ChainBackend } from './chain/backend.js';
import { createEmbeddedBackend } from './chain/embedded/backend.js';
import type { StepExecutor, StepName } from './chain/steps/types.js';
import type { Config } from './config/config.js';
import type { Db } from './db/database.js';
import type { MissingProgram } from './http/routes/launches.js';
import type { LaunchRequest } from './launches/request.js';
import type { Clock } from './lib/clock.js';

/** The configured chain backend: embedded LiteSVM unless SOLANA_RPC_URL is set. */
export async function createChainBackend(config: Config, deps: { db: Db; clock: Clock; logger: Logger }): Promise<ChainBackend> {
  if (config.chain.mode === 'rpc') throw new Error('SOLANA_RPC_URL: the RPC backend is not wired yet');
  return createEmbeddedBackend({ db: deps.db, secretKey: config.secretKey, clock: deps.clock, logger: deps.logger, programsDir: config.chain.programsDir });
}

/** The programs a request needs that are not executable on the chain (SPEC §3 capability check). */
export async function checkCapabilities(chain: ChainBackend, request: LaunchRequest): Promise<MissingProgram[]> {
  void chain;
  void request;
  void PublicKey;
  return [];
}

/** Step executors by name. */
export function stepExecutorsFor(): Partial<Record<StepName, StepExecutor>> {
  return {};
}
