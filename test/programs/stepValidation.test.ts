import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keypair } from '@solana/web3.js';
import { createDao, createDaoStep } from '../../src/chain/steps/createDao.js';
import { createPool, createPoolStep } from '../../src/chain/steps/createPool.js';
import { createVestingStep } from '../../src/chain/steps/createVesting.js';
import { solToLamports } from '../../src/chain/steps/support.js';
import { DEFAULT_PROGRAM_IDS } from '../../src/chain/programs/programIds.js';
import { fullPlan, startLaunch, type EmbeddedLaunch } from './support/embeddedLaunch.js';

const nonRetriable = (code: string) => ({ name: 'NonRetriableError', code });

describe('vesting, DAO and pool steps refuse what they cannot do, before sending anything', () => {
  let launch: EmbeddedLaunch;
  let t22: Awaited<ReturnType<EmbeddedLaunch['another']>>;
  beforeAll(async () => {
    launch = await startLaunch(fullPlan());
    t22 = await launch.another(fullPlan({ tokenStandard: 'token-2022' }));
  });
  afterAll(async () => {
    await launch.close();
  });

  it('fails with chain_capability_missing when the program is not on the chain', async () => {
    const absent = Keypair.generate().publicKey.toBase58();
    await expect(launch.run('create_vesting', createVestingStep({ vesting: absent }))).rejects.toMatchObject(nonRetriable('chain_capability_missing'));
    await expect(launch.run('create_dao', createDaoStep({ governance: absent }))).rejects.toMatchObject(nonRetriable('chain_capability_missing'));
    await expect(launch.run('create_pool', createPoolStep({ ...DEFAULT_PROGRAM_IDS, pool: absent }))).rejects.toMatchObject(
      nonRetriable('invalid_configuration'), // an unknown CPMM id has no known fee receiver
    );
    expect(launch.harness.pending.create_vesting ?? {}).toEqual({});
  });

  it('refuses a DAO on a Token-2022 mint', async () => {
    await expect(t22.run('create_dao', createDao)).rejects.toMatchObject(nonRetriable('invalid_configuration'));
  });

  it('refuses realm names longer than a PDA seed', async () => {
    const other = await launch.another(fullPlan({ dao: { name: 'n'.repeat(33), votingPeriodSeconds: 3600, quorumPercent: 10 } }));
    await expect(other.run('create_dao', createDao)).rejects.toMatchObject(nonRetriable('invalid_configuration'));
  });

  it('refuses a pool quoted in anything but wrapped SOL', async () => {
    const other = await launch.another(fullPlan({ pool: { quoteMint: Keypair.generate().publicKey.toBase58(), quoteAmount: '5' } }));
    await expect(other.run('create_pool', createPool)).rejects.toMatchObject(nonRetriable('invalid_configuration'));
  });
});

describe('quote amounts', () => {
  it('parse decimal SOL into lamports', () => {
    expect(solToLamports('5')).toBe(5_000_000_000n);
    expect(solToLamports('0.000000001')).toBe(1n);
    expect(solToLamports('1.5')).toBe(1_500_000_000n);
  });

  it('reject more than nine decimals, signs, zero and garbage', () => {
    for (const bad of ['0.0000000001', '-1', '0', '1e9', 'five', '']) {
      expect(() => solToLamports(bad)).toThrow();
    }
  });
});
