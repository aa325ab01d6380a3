import { afterEach, describe, expect, it } from 'vitest';
import { PublicKey } from '@solana/web3.js';
import { TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID, unpackAccount } from '@solana/spl-token';
import { createVesting } from '../../src/chain/steps/createVesting.js';
import { decodeVestingEscrow } from '../../src/chain/programs/jupiterLock/escrowAccount.js';
import { JUPITER_LOCK_PROGRAM_ID } from '../../src/chain/programs/programIds.js';
import { splitSupply } from '../../src/chain/steps/allocations.js';
import { fullPlan, startLaunch, type EmbeddedLaunch } from './support/embeddedLaunch.js';
import { haveBinaries, needs } from './support/binaries.js';

const LOCK = JUPITER_LOCK_PROGRAM_ID.toBase58();

describe.skipIf(!haveBinaries(LOCK))(`create_vesting on the real Jupiter Lock program${needs(LOCK)}`, () => {
  let launch: EmbeddedLaunch | undefined;
  afterEach(async () => {
    await launch?.close();
    launch = undefined;
  });

  async function readEscrow(l: EmbeddedLaunch, escrow: string) {
    const info = await l.chain.getAccountInfo(new PublicKey(escrow));
    expect(info?.owner.equals(JUPITER_LOCK_PROGRAM_ID)).toBe(true);
    return decodeVestingEscrow(info?.data ?? Buffer.alloc(0));
  }

  it('locks the vesting allocation for the beneficiary with the requested cliff and periods', async () => {
    const plan = fullPlan();
    launch = await startLaunch(plan);
    const outcome = await launch.run('create_vesting', createVesting);
    const vesting = outcome.result.vesting as { escrow: string; escrowTokenAccount: string; schedule: { startTime: number } };
    expect(outcome.result.vestingContract).toBe(vesting.escrow);
    expect(outcome.transactions).toEqual([{ type: 'vesting', signature: expect.any(String) }]);

    const escrow = await readEscrow(launch, vesting.escrow);
    const amount = splitSupply(plan).find((s) => s.kind === 'vesting')?.amount ?? 0n;
    expect(escrow.recipient.toBase58()).toBe(plan.vesting?.beneficiary);
    expect(escrow.tokenMint.equals(launch.harness.context('create_vesting').keys.mint.publicKey)).toBe(true);
    expect(escrow.cliffTime - escrow.vestingStartTime).toBe(2_592_000n);
    expect(escrow.frequency).toBe(86_400n);
    expect(escrow.numberOfPeriod).toBe(365n);
    expect(escrow.amountPerPeriod).toBe(amount / 365n);
    expect(escrow.cliffUnlockAmount + escrow.amountPerPeriod * 365n).toBe(amount);
    expect(BigInt(vesting.schedule.startTime)).toBe(escrow.vestingStartTime);

    const tokenInfo = await launch.chain.getAccountInfo(new PublicKey(vesting.escrowTokenAccount));
    const tokens = unpackAccount(new PublicKey(vesting.escrowTokenAccount), tokenInfo, TOKEN_PROGRAM_ID);
    expect(tokens.amount).toBe(amount);
  });

  it('creates no second escrow when run again, with or without the recorded transaction', async () => {
    launch = await startLaunch(fullPlan());
    const first = await launch.run('create_vesting', createVesting);
    const again = await launch.run('create_vesting', createVesting);
    expect(again.transactions).toEqual(first.transactions);
    launch.harness.pending.create_vesting = {};
    const afterLostRecord = await launch.run('create_vesting', createVesting);
    expect(afterLostRecord.result.vestingContract).toBe(first.result.vestingContract);
    expect(afterLostRecord.transactions).toEqual([]);
    const escrows = await launch.chain.getAccountInfo(new PublicKey(first.result.vestingContract as string));
    expect(escrows).not.toBeNull();
  });

  it('uses create_vesting_escrow_v2 for a Token-2022 mint', async () => {
    launch = await startLaunch(fullPlan({ tokenStandard: 'token-2022', dao: undefined }));
    const outcome = await launch.run('create_vesting', createVesting);
    const vesting = outcome.result.vesting as { escrow: string; escrowTokenAccount: string; amount: string };
    const escrow = await readEscrow(launch, vesting.escrow);
    expect(escrow.tokenProgramFlag).toBe(1);
    const info = await launch.chain.getAccountInfo(new PublicKey(vesting.escrowTokenAccount));
    expect(info?.owner.equals(TOKEN_2022_PROGRAM_ID)).toBe(true);
    expect(unpackAccount(new PublicKey(vesting.escrowTokenAccount), info, TOKEN_2022_PROGRAM_ID).amount.toString()).toBe(vesting.amount);
  });
});
