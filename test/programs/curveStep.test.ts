import { PublicKey } from '@solana/web3.js';
import { TOKEN_2022_PROGRAM_ID } from '@solana/spl-token';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { curveKit } from '../../src/chain/programs/dbc/curve.js';
import { dbcGenesisHook } from '../../src/chain/programs/dbc/genesis.js';
import { DBC_PROGRAM_ID, DEFAULT_PROGRAM_IDS } from '../../src/chain/programs/programIds.js';
import type { LaunchPlan } from '../../src/chain/steps/types.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { ataBalance } from '../chain/support/readBack.js';
import { StepHarness, samplePlan, tempDatabase } from '../chain/support/fixtures.js';
import { haveBinaries, needs, programsDir } from './support/binaries.js';

const IDS = [DEFAULT_PROGRAM_IDS.curve];

function curvePlan(): LaunchPlan {
  return samplePlan({
    totalSupply: 1_000_000_000n,
    allocations: { creator: 0, vesting: 0, treasury: 0, pool: 100 },
    pool: {
      kind: 'bonding-curve',
      quoteMint: 'So11111111111111111111111111111111111111112',
      initialMarketCap: '30',
      graduationMarketCap: '400',
      graduationSupplyPercent: 20,
      tradingFeeBps: 100,
      creatorFeePercent: 50,
      antiSniping: true,
      firstBuy: { quoteAmount: '0.5' },
    },
  });
}

describe.skipIf(!haveBinaries(...IDS))(`create_curve is crash-safe${needs(...IDS)}`, () => {
  let chain: EmbeddedBackend;
  let close: () => Promise<void>;
  beforeEach(async () => {
    const tmp = await tempDatabase();
    const opened = await tmp.open();
    chain = await createEmbeddedBackend({ db: opened.db, secretKey: Buffer.alloc(32, 9), clock: manualClock(Date.UTC(2026, 10, 22, 12)), logger: silentLogger(), programsDir, genesisHooks: [dbcGenesisHook(DBC_PROGRAM_ID)] });
    close = async () => {
      await chain.close();
      await opened.close();
      tmp.cleanup();
    };
  });
  afterEach(async () => close());

  it('a crash after each transaction was recorded, before it was sent, resumes to one curve and one first buy', async () => {
    const plan = curvePlan();
    const harness = new StepHarness(chain, plan);
    harness.crashAfterRecord = new Error('crash after recording the config transaction');
    await expect(harness.run('create_curve')).rejects.toThrow('config transaction');
    expect(Object.keys(harness.pending.create_curve ?? {})).toEqual(['create_curve_config']);
    harness.crashAfterRecord = new Error('crash after recording the pool transaction');
    await expect(harness.run('create_curve')).rejects.toThrow('pool transaction');
    expect(Object.keys(harness.pending.create_curve ?? {}).sort()).toEqual(['create_curve_config', 'create_curve_pool']);

    const outcome = await harness.run('create_curve');
    expect(outcome.transactions.map((t) => t.type)).toEqual(['curve_config', 'curve_pool']);
    const pool = (outcome.result.pool as { address: string }).address;
    const state = (await curveKit()).decodeCurveState((await chain.getAccountInfo(new PublicKey(pool)))!.data);
    // One first buy: the reserve holds 0.5 SOL less the 1 % fee, once.
    expect(state.quoteReserve > 494_000_000n && state.quoteReserve < 496_000_000n).toBe(true);
    const bought = await ataBalance(chain, outcome.result.mint as string, plan.creator, TOKEN_2022_PROGRAM_ID);
    expect(bought > 0n).toBe(true);

    // The results lost after completion: the step finds its curve on chain and sends nothing.
    harness.pending.create_curve = {};
    const again = await harness.run('create_curve');
    expect(again.transactions).toEqual([]);
    expect(again.result).toEqual(outcome.result);
    expect(await ataBalance(chain, outcome.result.mint as string, plan.creator, TOKEN_2022_PROGRAM_ID)).toBe(bought);
  });
});
