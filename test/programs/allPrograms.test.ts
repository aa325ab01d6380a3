import { afterEach, describe, expect, it } from 'vitest';
import { PublicKey } from '@solana/web3.js';
import { createDao } from '../../src/chain/steps/createDao.js';
import { createPool } from '../../src/chain/steps/createPool.js';
import { createVesting } from '../../src/chain/steps/createVesting.js';
import type { ChainBackend } from '../../src/chain/backend.js';
import type { StepExecutor, StepName } from '../../src/chain/steps/types.js';
import { CPMM_MAINNET_PROGRAM_ID, JUPITER_LOCK_PROGRAM_ID, SPL_GOVERNANCE_PROGRAM_ID } from '../../src/chain/programs/programIds.js';
import { fullPlan, startLaunch, type EmbeddedLaunch } from './support/embeddedLaunch.js';
import { haveBinaries, needs } from './support/binaries.js';

const METADATA = 'metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s';
const ALL = [METADATA, JUPITER_LOCK_PROGRAM_ID.toBase58(), SPL_GOVERNANCE_PROGRAM_ID.toBase58(), CPMM_MAINNET_PROGRAM_ID.toBase58()];
const STEPS: Array<[StepName, StepExecutor, string]> = [
  ['create_vesting', createVesting, 'vestingContract'],
  ['create_dao', createDao, 'dao'],
  ['create_pool', createPool, 'pool'],
];

describe.skipIf(!haveBinaries(...ALL))(`a full spl-token launch on the embedded chain${needs(...ALL)}`, () => {
  let launch: EmbeddedLaunch | undefined;
  afterEach(async () => {
    await launch?.close();
    launch = undefined;
  });

  it('runs mint, metadata, supply, vesting, DAO and pool, each with one typed transaction', async () => {
    launch = await startLaunch(fullPlan(), { withMetadata: true });
    const types: string[] = [];
    for (const [step, executor] of STEPS) {
      const outcome = await launch.run(step, executor);
      types.push(...outcome.transactions.map((t) => t.type));
    }
    expect(types).toEqual(['vesting', 'dao', 'pool']);
    const results = launch.harness.results as { vestingContract: string; dao: { realm: string; treasury: string }; pool: { address: string; lpMint: string } };
    for (const address of [results.vestingContract, results.dao.realm, results.dao.treasury, results.pool.address, results.pool.lpMint]) {
      expect(await launch.chain.getAccountInfo(new PublicKey(address))).not.toBeNull();
    }
  });

  it.each(STEPS)('resumes %s after a crash right after recording its transaction, creating it once', async (step, executor, key) => {
    launch = await startLaunch(fullPlan());
    launch.harness.crashAfterRecord = new Error('simulated crash');
    await expect(launch.run(step, executor)).rejects.toThrow('simulated crash');
    const recorded = Object.values(launch.harness.pending[step] ?? {});
    expect(recorded).toHaveLength(1);

    const resumed = await launch.run(step, executor);
    expect(resumed.transactions).toEqual([{ type: step.replace('create_', ''), signature: recorded[0]?.signature }]);
    expect(resumed.result[key]).toBeDefined();
    const again = await launch.run(step, executor);
    expect(again).toEqual(resumed);
  });

  it.each(STEPS)('resumes %s after a crash once its transaction landed, sending nothing new', async (step, executor, key) => {
    launch = await startLaunch(fullPlan());
    const chain = launch.chain;
    let sends = 0;
    launch.harness.chain = Object.assign(Object.create(chain) as ChainBackend, {
      async sendRawTransaction(bytes: Uint8Array) {
        sends += 1;
        return chain.sendRawTransaction(bytes);
      },
      async confirmTransaction() {
        throw new Error('simulated crash');
      },
    });
    await expect(launch.run(step, executor)).rejects.toThrow('simulated crash');
    expect(sends).toBe(1);
    launch.harness.chain = Object.assign(Object.create(chain) as ChainBackend, {
      async sendRawTransaction(bytes: Uint8Array) {
        sends += 1;
        return chain.sendRawTransaction(bytes);
      },
    });
    const resumed = await launch.run(step, executor);
    expect(sends).toBe(1);
    expect(resumed.transactions[0]?.signature).toBe(Object.values(launch.harness.pending[step] ?? {})[0]?.signature);
    expect(resumed.result[key]).toBeDefined();
  });
});
