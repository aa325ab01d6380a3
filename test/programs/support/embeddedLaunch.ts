import { PublicKey } from '@solana/web3.js';
import { manualClock } from '../../../src/lib/clock.js';
import { silentLogger } from '../../../src/lib/logger.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../../src/chain/embedded/backend.js';
import { cpmmGenesisHook } from '../../../src/chain/programs/cpmm/genesis.js';
import { CPMM_MAINNET_PROGRAM_ID } from '../../../src/chain/programs/programIds.js';
import type { LaunchPlan, StepExecutor, StepName, StepOutcome } from '../../../src/chain/steps/types.js';
import { StepHarness, samplePlan, tempDatabase } from '../../chain/support/fixtures.js';
import { programsDir } from './binaries.js';

/** The embedded chain with the programs of CHAIN_PROGRAMS_DIR and the CPMM genesis accounts. */
export interface EmbeddedLaunch {
  chain: EmbeddedBackend;
  harness: StepHarness;
  clock: ReturnType<typeof manualClock>;
  /** Runs one of our executors with the harness' context and merges its result like the runner. */
  run(step: StepName, executor: StepExecutor): Promise<StepOutcome>;
  /** A second launch on the same chain, its supply minted. */
  another(plan: LaunchPlan): Promise<Omit<EmbeddedLaunch, 'another' | 'close'>>;
  close(): Promise<void>;
}

async function mintSupply(chain: EmbeddedBackend, plan: LaunchPlan, clock: ReturnType<typeof manualClock>, withMetadata = false) {
  const harness = new StepHarness(chain, plan);
  await harness.run('create_mint');
  if (withMetadata) await harness.run('create_metadata');
  await harness.run('distribute_supply');
  return {
    chain,
    harness,
    clock,
    async run(step: StepName, executor: StepExecutor) {
      const outcome = await executor(harness.context(step));
      Object.assign(harness.results, outcome.result);
      return outcome;
    },
  };
}

/** An `spl-token` plan with every optional section, for a fresh creator and beneficiary. */
export function fullPlan(overrides: Partial<LaunchPlan> = {}): LaunchPlan {
  return samplePlan({
    tokenStandard: 'spl-token',
    totalSupply: 1_000_000_000n,
    vesting: { beneficiary: PublicKey.unique().toBase58(), cliffSeconds: 2_592_000, periodSeconds: 86_400, periods: 365 },
    dao: { name: `DAO ${Math.random().toString(36).slice(2, 10)}`, votingPeriodSeconds: 259_200, quorumPercent: 10 },
    pool: { quoteMint: 'So11111111111111111111111111111111111111112', quoteAmount: '5' },
    ...overrides,
  });
}

/** Starts the chain and mints the plan's supply (create_mint, distribute_supply) into the payer; `fundLamports` replaces automatic funding. */
export async function startLaunch(plan: LaunchPlan, options: { fundLamports?: bigint; withMetadata?: boolean } = {}): Promise<EmbeddedLaunch> {
  const tmp = await tempDatabase();
  const opened = await tmp.open();
  const clock = manualClock(Date.UTC(2026, 10, 22, 12));
  const chain = await createEmbeddedBackend({
    db: opened.db,
    secretKey: Buffer.alloc(32, 7),
    clock,
    logger: silentLogger(),
    programsDir,
    genesisHooks: [cpmmGenesisHook(CPMM_MAINNET_PROGRAM_ID)],
    // A fixed budget instead of automatic top-ups, for balance tests.
    ...(options.fundLamports !== undefined ? { funding: false as const } : {}),
  });
  if (options.fundLamports !== undefined) await chain.airdrop(chain.payer.publicKey, options.fundLamports);
  const first = await mintSupply(chain, plan, clock, options.withMetadata);
  return {
    ...first,
    another: (other) => mintSupply(chain, other, clock),
    async close() {
      await chain.close();
      await opened.close();
      tmp.cleanup();
    },
  };
}
