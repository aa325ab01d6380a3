import { clusterLacksLine, missingProgramsLine } from '../chain/missingPrograms.js';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { PublicKey } from '@solana/web3.js';
import type { Logger } from 'pino';
import type { ChainBackend } from '../chain/backend.js';
import { createEmbeddedBackend } from '../chain/embedded/backend.js';
import { connectChainThread, type ChainThread } from '../chain/embedded/thread/client.js';
import { createRpcBackend } from '../chain/rpc/backend.js';
import { parseRpcUrls } from '../chain/rpc/endpoints.js';
import { loadKeypairFile } from '../chain/rpc/payerFile.js';
import { cpmmGenesisHook } from '../chain/programs/cpmm/genesis.js';
import { dammV2GenesisHook } from '../chain/programs/dbc/dammGenesis.js';
import { dbcGenesisHook } from '../chain/programs/dbc/genesis.js';
import { CPMM_MAINNET_PROGRAM_ID, DAMM_V2_PROGRAM_ID, DBC_PROGRAM_ID, DEFAULT_PROGRAM_IDS, PROGRAM_NAMES, type ProgramIds } from '../chain/programs/programIds.js';
import { requiredPrograms, stepExecutors } from '../chain/steps/index.js';
import type { CapabilityGap, RequiredProgram, StepExecutor, StepName } from '../chain/steps/types.js';
import type { Config } from '../config/config.js';
import type { Db } from '../db/database.js';
import { planFromRequest } from '../launches/plan.js';
import { storedRequest, type LaunchRequest } from '../launches/request.js';
import type { Clock } from '../lib/clock.js';

/** What building the chain backend reads of the config (also all the chain thread is given). */
export type ChainConfig = Pick<Config, 'chain' | 'secretKey' | 'dataDir'>;

/** The configured chain backend: embedded LiteSVM unless SOLANA_RPC_URL is set. */
export async function createChainBackend(
  config: ChainConfig,
  deps: { db: Db; clock: Clock; logger: Logger; writeGate?: <T>(write: () => Promise<T>) => Promise<T> },
): Promise<ChainBackend> {
  const fees = { priorityFeeMicroLamports: config.chain.priorityFeeMicroLamports, computeUnitLimit: config.chain.computeUnitLimit, priorityFeeMaxMicroLamports: config.chain.priorityFeeMaxMicroLamports };
  if (config.chain.mode === 'rpc' && config.chain.rpcUrl && config.chain.payerKeypairPath) {
    return createRpcBackend({
      rpcUrls: parseRpcUrls(config.chain.rpcUrl),
      payer: loadKeypairFile(config.chain.payerKeypairPath),
      fees,
      clock: deps.clock,
      logger: deps.logger,
      requestTimeoutMs: config.chain.rpcTimeoutMs,
      readTimeoutMs: config.chain.rpcReadTimeoutMs,
      breaker: { resetTimeoutMs: config.chain.rpcBreakerResetMs },
    });
  }
  return createEmbeddedBackend({
    db: deps.db,
    secretKey: config.secretKey,
    clock: deps.clock,
    logger: deps.logger,
    programsDir: config.chain.programsDir,
    // CHAIN_CLONE_FROM: the steps' programs it lacks come from that cluster after the start, cached under DATA_DIR.
    clone: config.chain.cloneFrom ? { sourceUrl: config.chain.cloneFrom, programs: STEP_PROGRAMS, cacheDir: join(config.dataDir, 'programs') } : undefined,
    expectedPrograms: STEP_PROGRAMS,
    // Accounts the pool programs need before their first pool (CPMM: an AmmConfig and its fee
    // receiver; DBC: the wrapped-SOL mint and its pool authority's flash-rent lamports; DAMM v2:
    // the configs a graduating curve migrates into).
    genesisHooks: [cpmmGenesisHook(CPMM_MAINNET_PROGRAM_ID), dbcGenesisHook(DBC_PROGRAM_ID), dammV2GenesisHook(DAMM_V2_PROGRAM_ID)],
    writeGate: deps.writeGate,
  });
}

/** The programs the launch steps call beyond the embedded defaults, named. */
const STEP_PROGRAMS = (Object.keys(DEFAULT_PROGRAM_IDS) as Array<keyof ProgramIds>).map((key) => ({ programId: DEFAULT_PROGRAM_IDS[key], name: PROGRAM_NAMES[key] }));

/**
 * The programs a request needs that are not executable on the chain (docs/api.md capability check),
 * with the one line that says so: on the embedded chain the line its start logged (why they were
 * not fetched, the two ways to provide them). An embedded chain that can fetch programs
 * (CHAIN_CLONE_FROM) is asked for the missing ones first. Undefined when nothing is missing.
 */
export async function checkCapabilities(chain: ChainBackend, request: LaunchRequest): Promise<CapabilityGap | undefined> {
  const plan = planFromRequest('capability-check', storedRequest(request));
  const needed = requiredPrograms(plan);
  const absent = async (list: RequiredProgram[]) => {
    const present = await Promise.all(list.map((program) => chain.isProgramExecutable(new PublicKey(program.programId))));
    return list.filter((_, i) => !present[i]);
  };
  let missing = await absent(needed);
  if (missing.length === 0) return undefined;
  const failure = await chain.fetchPrograms?.(missing.map((program) => program.programId));
  if (chain.fetchPrograms) missing = await absent(missing);
  if (missing.length === 0) return undefined;
  return { missing, line: chain.kind === 'embedded' ? missingProgramsLine(missing, failure) : clusterLacksLine(missing) };
}

/** Step executors by name. */
export function stepExecutorsFor(): Partial<Record<StepName, StepExecutor>> {
  return stepExecutors;
}

/** What the chain thread is started with (`chainThread.ts`). */
export interface ChainThreadData {
  config: ChainConfig;
  /** The service's SQLite file: the chain thread keeps the chain's state in it, on a connection of its own. */
  databasePath: string;
  logLevel: string;
  /** The write lock its connection shares with the main thread's (db/writeLock.ts). */
  writeLock: SharedArrayBuffer;
}

/**
 * Starts the embedded chain on a worker thread of its own (CHAIN_THREAD=on): LiteSVM, the launch
 * steps' building, signing and execution, and the commits of the chain's state (a second connection
 * to the service's SQLite file, each commit under the write lock the two connections share in
 * memory, `writeLock` from OpenedDatabase.shareWriteLock) all run there; the main thread keeps the API, health, the runner's bookkeeping and the dispatcher.
 * Under tsx (sources, tests, the bench) the thread loads the TypeScript entry through tsx's loader;
 * from the bundle, `dist/app/chainThread.mjs`.
 */
export async function startChainThread(
  config: Config,
  deps: { clock: Clock; logger: Logger; writeLock: { buffer: SharedArrayBuffer; reset(): void } },
): Promise<ChainThread> {
  const data: ChainThreadData = {
    config: { chain: config.chain, secretKey: config.secretKey, dataDir: config.dataDir },
    databasePath: config.databasePath,
    logLevel: config.logLevel,
    writeLock: deps.writeLock.buffer,
  };
  const fromSources = import.meta.url.endsWith('.ts');
  const entry = new URL(fromSources ? './chainThread.ts' : './chainThread.mjs', import.meta.url);
  const spawn = () => (fromSources ? new Worker(tsxBootstrap(entry), { eval: true, workerData: data }) : new Worker(entry, { workerData: data }));
  return connectChainThread(spawn, { clock: deps.clock, logger: deps.logger, writeLock: deps.writeLock });
}

/** A worker script that registers tsx's loader, then imports the TypeScript entry. */
function tsxBootstrap(entry: URL): string {
  const tsxApi = pathToFileURL(createRequire(import.meta.url).resolve('tsx/package.json').replace(/package\.json$/, 'dist/esm/api/index.mjs')).href;
  return `import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); }).catch((error) => { console.error(error); process.exit(1); });`;
}
