import { afterEach, describe, expect, it } from 'vitest';
import BN from 'bn.js';
import { Keypair, PublicKey, Transaction, TransactionInstruction } from '@solana/web3.js';
import { TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID, createAssociatedTokenAccountIdempotentInstruction, getAssociatedTokenAddressSync, unpackAccount } from '@solana/spl-token';
import { instructionDiscriminator } from '../../src/chain/programs/anchor.js';
import { eventAuthorityAddress } from '../../src/chain/programs/jupiterLock/pdas.js';
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

  it('unlocks cliffUnlockPercent at the cliff: the escrow holds it as cliff_unlock_amount and a claim right after the cliff moves exactly that', async () => {
    const beneficiary = Keypair.generate();
    const plan = fullPlan({ vesting: { beneficiary: beneficiary.publicKey.toBase58(), cliffSeconds: 3600, periodSeconds: 3600, periods: 3, cliffUnlockPercent: 25 } });
    launch = await startLaunch(plan);
    const outcome = await launch.run('create_vesting', createVesting);
    const vesting = outcome.result.vesting as { escrow: string; escrowTokenAccount: string; mint: string; amount: string; schedule: { cliffUnlockAmount: string; amountPerPeriod: string } };
    const escrowAddress = new PublicKey(vesting.escrow);
    const escrow = await readEscrow(launch, vesting.escrow);
    const amount = splitSupply(plan).find((s) => s.kind === 'vesting')?.amount ?? 0n;
    // The allocation exactly: 25 % at the cliff (and what three periods leave undivided), the rest in three equal periods.
    const afterCliff = amount - (amount * 25n) / 100n;
    expect(escrow.amountPerPeriod).toBe(afterCliff / 3n);
    expect(escrow.cliffUnlockAmount).toBe(amount - (afterCliff / 3n) * 3n);
    expect(escrow.cliffUnlockAmount + escrow.amountPerPeriod * 3n).toBe(amount);
    expect(escrow.cliffUnlockAmount > 0n).toBe(true);
    expect(vesting.schedule.cliffUnlockAmount).toBe(escrow.cliffUnlockAmount.toString());

    // One second past the cliff (the embedded chain's clock follows the test's), the beneficiary claims all it may (claim_v2, max u64).
    launch.clock.advance(3601 * 1000);
    await launch.chain.airdrop(beneficiary.publicKey, 1_000_000_000n);
    const mint = new PublicKey(vesting.mint);
    const recipientToken = getAssociatedTokenAddressSync(mint, beneficiary.publicKey, false, TOKEN_PROGRAM_ID);
    const LOCK_ID = JUPITER_LOCK_PROGRAM_ID;
    const claim = new TransactionInstruction({
      programId: LOCK_ID,
      keys: [
        { pubkey: escrowAddress, isSigner: false, isWritable: true },
        { pubkey: mint, isSigner: false, isWritable: false },
        { pubkey: new PublicKey(vesting.escrowTokenAccount), isSigner: false, isWritable: true },
        { pubkey: beneficiary.publicKey, isSigner: true, isWritable: true },
        { pubkey: recipientToken, isSigner: false, isWritable: true },
        { pubkey: new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr'), isSigner: false, isWritable: false },
        { pubkey: TOKEN_PROGRAM_ID, isSigner: false, isWritable: false },
        { pubkey: eventAuthorityAddress(), isSigner: false, isWritable: false },
        { pubkey: LOCK_ID, isSigner: false, isWritable: false },
      ],
      data: Buffer.concat([instructionDiscriminator('claim_v2'), Buffer.from(new BN('18446744073709551615').toArray('le', 8)), Buffer.from([0])]),
    });
    const { blockhash, lastValidBlockHeight } = await launch.chain.getLatestBlockhash();
    const tx = new Transaction({ feePayer: beneficiary.publicKey, blockhash, lastValidBlockHeight })
      .add(createAssociatedTokenAccountIdempotentInstruction(beneficiary.publicKey, recipientToken, beneficiary.publicKey, mint, TOKEN_PROGRAM_ID), claim);
    tx.sign(beneficiary);
    const signature = await launch.chain.sendRawTransaction(tx.serialize());
    await launch.chain.confirmTransaction(signature, lastValidBlockHeight);

    const received = unpackAccount(recipientToken, await launch.chain.getAccountInfo(recipientToken), TOKEN_PROGRAM_ID).amount;
    expect(received).toBe(escrow.cliffUnlockAmount);
    expect((await readEscrow(launch, vesting.escrow)).totalClaimedAmount).toBe(escrow.cliffUnlockAmount);
    const left = unpackAccount(new PublicKey(vesting.escrowTokenAccount), await launch.chain.getAccountInfo(new PublicKey(vesting.escrowTokenAccount)), TOKEN_PROGRAM_ID).amount;
    expect(left).toBe(amount - escrow.cliffUnlockAmount);
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
