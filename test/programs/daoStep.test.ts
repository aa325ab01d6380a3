import { afterEach, describe, expect, it } from 'vitest';
import { PublicKey } from '@solana/web3.js';
import { ACCOUNT_SIZE, TOKEN_PROGRAM_ID, unpackAccount } from '@solana/spl-token';
import { createDao } from '../../src/chain/steps/createDao.js';
import { splitSupply } from '../../src/chain/steps/allocations.js';
import { decodeGovernance, decodeRealm } from '../../src/chain/programs/governance/accounts.js';
import { GOVERNANCE_SIZES } from '../../src/chain/steps/costs.js';
import { SPL_GOVERNANCE_PROGRAM_ID } from '../../src/chain/programs/programIds.js';
import { realmConfigAddress } from '../../src/chain/programs/governance/pdas.js';
import { fullPlan, startLaunch, type EmbeddedLaunch } from './support/embeddedLaunch.js';
import { haveBinaries, needs } from './support/binaries.js';

const GOV = SPL_GOVERNANCE_PROGRAM_ID;

interface DaoResult { realm: string; governance: string; treasury: string; treasuryTokenAccount: string }

describe.skipIf(!haveBinaries(GOV.toBase58()))(`create_dao on the real SPL Governance program${needs(GOV.toBase58())}`, () => {
  let launch: EmbeddedLaunch | undefined;
  afterEach(async () => {
    await launch?.close();
    launch = undefined;
  });

  it('creates a realm on the launched mint, a governance holding its authority, and a funded treasury', async () => {
    const plan = fullPlan();
    launch = await startLaunch(plan);
    const outcome = await launch.run('create_dao', createDao);
    const dao = outcome.result.dao as DaoResult;
    expect(outcome.transactions).toEqual([{ type: 'dao', signature: expect.any(String) }]);
    const mint = launch.harness.context('create_dao').keys.mint.publicKey;

    const realmInfo = await launch.chain.getAccountInfo(new PublicKey(dao.realm));
    const realm = decodeRealm(GOV, realmInfo?.data ?? Buffer.alloc(0));
    expect(realm.name).toBe(plan.dao?.name);
    expect(realm.communityMint.equals(mint)).toBe(true);
    expect(realm.authority?.toBase58()).toBe(dao.governance);

    const governance = decodeGovernance(GOV, (await launch.chain.getAccountInfo(new PublicKey(dao.governance)))?.data ?? Buffer.alloc(0));
    expect(governance.realm.toBase58()).toBe(dao.realm);
    expect(governance.governedAccount.equals(mint)).toBe(true);
    expect(governance.yesVotePercent).toBe(10);
    expect(governance.votingTimeSeconds).toBe(259_200);

    const treasury = await launch.chain.getAccountInfo(new PublicKey(dao.treasury));
    expect(treasury?.owner.toBase58()).toBe('11111111111111111111111111111111');
    const tokenInfo = await launch.chain.getAccountInfo(new PublicKey(dao.treasuryTokenAccount));
    const tokens = unpackAccount(new PublicKey(dao.treasuryTokenAccount), tokenInfo, TOKEN_PROGRAM_ID);
    expect(tokens.owner.toBase58()).toBe(dao.treasury);
    expect(tokens.amount).toBe(splitSupply(plan).find((s) => s.kind === 'treasury')?.amount);
  });

  it('budgets rent for exactly the account sizes the program creates', async () => {
    const plan = fullPlan();
    launch = await startLaunch(plan);
    const dao = (await launch.run('create_dao', createDao)).result.dao as DaoResult;
    const size = async (key: PublicKey) => (await launch?.chain.getAccountInfo(key))?.data.length ?? -1;
    expect(await size(new PublicKey(dao.realm))).toBe(GOVERNANCE_SIZES.realm(plan.dao?.name ?? ''));
    expect(await size(realmConfigAddress(new PublicKey(dao.realm)))).toBe(GOVERNANCE_SIZES.realmConfig);
    expect(await size(new PublicKey(dao.governance))).toBe(GOVERNANCE_SIZES.governance);
    expect(await size(new PublicKey(dao.treasuryTokenAccount))).toBe(ACCOUNT_SIZE);
  });

  it('creates no second realm when run again, with or without the recorded transaction', async () => {
    launch = await startLaunch(fullPlan());
    const first = await launch.run('create_dao', createDao);
    const again = await launch.run('create_dao', createDao);
    expect(again.transactions).toEqual(first.transactions);
    launch.harness.pending.create_dao = {};
    const afterLostRecord = await launch.run('create_dao', createDao);
    expect(afterLostRecord.result).toEqual(first.result);
    expect(afterLostRecord.transactions).toEqual([]);
  });

  it('fails with invalid_configuration when another launch holds the realm name', async () => {
    const dao = { name: `Taken ${Math.random().toString(36).slice(2, 8)}`, votingPeriodSeconds: 3600, quorumPercent: 50 };
    launch = await startLaunch(fullPlan({ dao }));
    await launch.run('create_dao', createDao);
    const other = await launch.another(fullPlan({ dao }));
    await expect(other.run('create_dao', createDao)).rejects.toMatchObject({ name: 'NonRetriableError', code: 'invalid_configuration' });
    expect(other.harness.pending.create_dao).toEqual({});
  });
});
