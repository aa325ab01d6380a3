import { afterEach, describe, expect, it } from 'vitest';
import { LAMPORTS_PER_SOL } from '@solana/web3.js';
import { assertPayerCoversProgramSteps, programStepCosts } from '../../src/chain/steps/balance.js';
import { DEFAULT_PROGRAM_IDS } from '../../src/chain/programs/programIds.js';
import { createPool } from '../../src/chain/steps/createPool.js';
import { CPMM_MAINNET_PROGRAM_ID } from '../../src/chain/programs/programIds.js';
import { fullPlan, startLaunch, type EmbeddedLaunch } from './support/embeddedLaunch.js';
import { haveBinaries, needs } from './support/binaries.js';

const SOL = BigInt(LAMPORTS_PER_SOL);

describe('payer balance pre-check for vesting, DAO and pool', () => {
  let launch: EmbeddedLaunch | undefined;
  afterEach(async () => {
    await launch?.close();
    launch = undefined;
  });

  it('counts rent, fees, the pool-creation fee and the quote SOL', async () => {
    const plan = fullPlan();
    launch = await startLaunch(plan, { fundLamports: SOL });
    const costs = await programStepCosts(launch.chain, plan, DEFAULT_PROGRAM_IDS);
    expect(costs.create_pool).toBeGreaterThan(5.15 * LAMPORTS_PER_SOL);
    expect(costs.create_pool).toBeLessThan(5.2 * LAMPORTS_PER_SOL);
    expect(costs.create_vesting).toBeGreaterThan(0);
    expect(costs.create_dao).toBeGreaterThan(0);
    expect(costs.total).toBe(costs.create_vesting + costs.create_dao + costs.create_pool);
    const withoutPool = await programStepCosts(launch.chain, { ...plan, pool: undefined }, DEFAULT_PROGRAM_IDS);
    expect(withoutPool.create_pool).toBe(0);
  });

  it('fails with insufficient_balance when the payer cannot cover them, and passes when it can', async () => {
    const plan = fullPlan();
    launch = await startLaunch(plan, { fundLamports: SOL });
    await expect(assertPayerCoversProgramSteps(launch.chain, launch.chain.payer.publicKey, plan, DEFAULT_PROGRAM_IDS)).rejects.toMatchObject({
      name: 'NonRetriableError',
      code: 'insufficient_balance',
    });
    await launch.chain.airdrop(launch.chain.payer.publicKey, 5n * SOL);
    const costs = await assertPayerCoversProgramSteps(launch.chain, launch.chain.payer.publicKey, plan, DEFAULT_PROGRAM_IDS);
    expect(costs.total).toBeGreaterThan(0);
  });

  it.skipIf(!haveBinaries(CPMM_MAINNET_PROGRAM_ID.toBase58()))(
    `create_pool records and sends nothing when the payer cannot pay the quote${needs(CPMM_MAINNET_PROGRAM_ID.toBase58())}`,
    async () => {
      const plan = fullPlan();
      launch = await startLaunch(plan, { fundLamports: SOL });
      await expect(launch.run('create_pool', createPool)).rejects.toMatchObject({ code: 'insufficient_balance' });
      expect(launch.harness.pending.create_pool ?? {}).toEqual({});
    },
  );
});
