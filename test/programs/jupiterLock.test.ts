import { describe, expect, it } from 'vitest';
import { Keypair, PublicKey, SystemProgram } from '@solana/web3.js';
import { ASSOCIATED_TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID, getAssociatedTokenAddressSync } from '@solana/spl-token';
import { accountDiscriminator, instructionDiscriminator } from '../../src/chain/programs/anchor.js';
import { JUPITER_LOCK_PROGRAM_ID } from '../../src/chain/programs/programIds.js';
import { decodeVestingEscrow, VESTING_ESCROW_SIZE } from '../../src/chain/programs/jupiterLock/escrowAccount.js';
import { createVestingEscrowInstruction, createVestingEscrowV2Instruction, encodeVestingParams } from '../../src/chain/programs/jupiterLock/instructions.js';
import { escrowAddress, eventAuthorityAddress } from '../../src/chain/programs/jupiterLock/pdas.js';
import { deriveVestingSchedule, EscrowMode, totalDeposit } from '../../src/chain/programs/jupiterLock/schedule.js';
import { buildCreateEscrowInstructions } from '../../src/chain/programs/jupiterLock/vestingInstructions.js';

const key = (n: number) => new PublicKey(Buffer.alloc(32, n));
const base = key(1);
const sender = key(2);
const senderToken = key(3);
const recipient = key(4);
const mint = key(5);
const params = deriveVestingSchedule(1_000_003n, 1_700_000_000n, { cliffSeconds: 100, periodSeconds: 10, periods: 4 });

describe('Jupiter Lock schedule derivation', () => {
  it('puts the cliff after the start, floors the per-period amount and unlocks the remainder at the cliff', () => {
    expect(params).toEqual({
      vestingStartTime: 1_700_000_000n,
      cliffTime: 1_700_000_100n,
      frequency: 10n,
      cliffUnlockAmount: 3n,
      amountPerPeriod: 250_000n,
      numberOfPeriod: 4n,
      updateRecipientMode: EscrowMode.onlyRecipient,
      cancelMode: EscrowMode.neither,
    });
    expect(totalDeposit(params)).toBe(1_000_003n);
  });

  it('unlocks cliffUnlockPercent of the amount at the cliff, with the periods\' remainder, exactly', () => {
    // 20 % of 1 000 003 = 200 000 (floored); 800 003 over 4 periods = 200 000 each, remainder 3 at the cliff.
    const withCliff = deriveVestingSchedule(1_000_003n, 1_700_000_000n, { cliffSeconds: 100, periodSeconds: 10, periods: 4, cliffUnlockPercent: 20 });
    expect(withCliff.cliffUnlockAmount).toBe(200_003n);
    expect(withCliff.amountPerPeriod).toBe(200_000n);
    expect(totalDeposit(withCliff)).toBe(1_000_003n);
    // The README's full launch: 150 000 DDAO of 6 decimals, 20 % at the cliff, two periods.
    const readme = deriveVestingSchedule(150_000_000_000n, 0n, { cliffSeconds: 30, periodSeconds: 30, periods: 2, cliffUnlockPercent: 20 });
    expect([readme.cliffUnlockAmount, readme.amountPerPeriod]).toEqual([30_000_000_000n, 60_000_000_000n]);
    // Near u64: no precision lost (a JS number would round these).
    const big = 2n ** 64n - 1n;
    const huge = deriveVestingSchedule(big, 0n, { cliffSeconds: 0, periodSeconds: 1, periods: 7, cliffUnlockPercent: 33 });
    expect(totalDeposit(huge)).toBe(big);
    expect(huge.cliffUnlockAmount - (big * 33n) / 100n).toBeLessThan(7n);
    expect(deriveVestingSchedule(1_000_003n, 0n, { cliffSeconds: 0, periodSeconds: 10, periods: 4, cliffUnlockPercent: 0 })).toEqual(deriveVestingSchedule(1_000_003n, 0n, { cliffSeconds: 0, periodSeconds: 10, periods: 4 }));
    expect(() => deriveVestingSchedule(10n, 0n, { cliffSeconds: 0, periodSeconds: 1, periods: 1, cliffUnlockPercent: 101 })).toThrow(/at most 100/);
  });

  it('unlocks everything at the cliff when there are no periods', () => {
    const cliffOnly = deriveVestingSchedule(500n, 10n, { cliffSeconds: 0, periodSeconds: 0, periods: 0 });
    expect(cliffOnly.cliffUnlockAmount).toBe(500n);
    expect(cliffOnly.amountPerPeriod).toBe(0n);
    expect(cliffOnly.frequency).toBe(1n);
    expect(totalDeposit(cliffOnly)).toBe(500n);
  });

  it('rejects periods without a period length and non-positive amounts', () => {
    expect(() => deriveVestingSchedule(10n, 0n, { cliffSeconds: 0, periodSeconds: 0, periods: 3 })).toThrow(/periodSeconds/);
    expect(() => deriveVestingSchedule(0n, 0n, { cliffSeconds: 0, periodSeconds: 1, periods: 1 })).toThrow(/positive/);
    expect(() => deriveVestingSchedule(10n, 0n, { cliffSeconds: -1, periodSeconds: 1, periods: 1 })).toThrow(/cliffSeconds/);
  });
});

describe('Jupiter Lock addresses', () => {
  it('derives the escrow from ["escrow", base] and the event authority from ["__event_authority"]', () => {
    const [expectedEscrow] = PublicKey.findProgramAddressSync([Buffer.from('escrow'), base.toBuffer()], JUPITER_LOCK_PROGRAM_ID);
    expect(escrowAddress(base).equals(expectedEscrow)).toBe(true);
    const [expectedAuthority] = PublicKey.findProgramAddressSync([Buffer.from('__event_authority')], JUPITER_LOCK_PROGRAM_ID);
    expect(eventAuthorityAddress().equals(expectedAuthority)).toBe(true);
  });
});

describe('create_vesting_escrow instruction', () => {
  const accounts = { base, sender, senderToken, recipient, mint, tokenProgram: TOKEN_PROGRAM_ID };
  const escrow = escrowAddress(base);
  const escrowToken = getAssociatedTokenAddressSync(mint, escrow, true, TOKEN_PROGRAM_ID);

  it('starts with the Anchor discriminator sha256("global:create_vesting_escrow")[0..8] that public clients use', () => {
    expect([...instructionDiscriminator('create_vesting_escrow')]).toEqual([23, 100, 197, 94, 222, 153, 38, 90]);
  });

  it('encodes the parameters as six little-endian u64 and two u8', () => {
    const data = encodeVestingParams(params);
    expect(data.length).toBe(50);
    expect(data.readBigUInt64LE(0)).toBe(1_700_000_000n);
    expect(data.readBigUInt64LE(8)).toBe(1_700_000_100n);
    expect(data.readBigUInt64LE(16)).toBe(10n);
    expect(data.readBigUInt64LE(24)).toBe(3n);
    expect(data.readBigUInt64LE(32)).toBe(250_000n);
    expect(data.readBigUInt64LE(40)).toBe(4n);
    expect([data[48], data[49]]).toEqual([2, 0]);
  });

  it('lists the accounts in program order with their signer and writable flags', () => {
    const ix = createVestingEscrowInstruction(accounts, params);
    expect(ix.programId.equals(JUPITER_LOCK_PROGRAM_ID)).toBe(true);
    expect(ix.keys.map((k) => [k.pubkey.toBase58(), k.isSigner, k.isWritable])).toEqual([
      [base.toBase58(), true, true],
      [escrow.toBase58(), false, true],
      [escrowToken.toBase58(), false, true],
      [sender.toBase58(), true, true],
      [senderToken.toBase58(), false, true],
      [recipient.toBase58(), false, false],
      [TOKEN_PROGRAM_ID.toBase58(), false, false],
      [SystemProgram.programId.toBase58(), false, false],
      [eventAuthorityAddress().toBase58(), false, false],
      [JUPITER_LOCK_PROGRAM_ID.toBase58(), false, false],
    ]);
    expect(ix.data.subarray(0, 8).equals(instructionDiscriminator('create_vesting_escrow'))).toBe(true);
    expect(ix.data.length).toBe(58);
  });

  it('refuses Token-2022 mints, which only v2 handles', () => {
    expect(() => createVestingEscrowInstruction({ ...accounts, tokenProgram: TOKEN_2022_PROGRAM_ID }, params)).toThrow(/v2/);
  });
});

describe('create_vesting_escrow_v2 instruction', () => {
  it('takes the mint after the escrow, the Token-2022 program, and ends with a None remaining-accounts option', () => {
    const ix = createVestingEscrowV2Instruction({ base, sender, senderToken, recipient, mint, tokenProgram: TOKEN_2022_PROGRAM_ID }, params);
    const escrow = escrowAddress(base);
    expect(ix.keys.map((k) => k.pubkey.toBase58())).toEqual([
      base,
      escrow,
      mint,
      getAssociatedTokenAddressSync(mint, escrow, true, TOKEN_2022_PROGRAM_ID),
      sender,
      senderToken,
      recipient,
      TOKEN_2022_PROGRAM_ID,
      SystemProgram.programId,
      eventAuthorityAddress(),
      JUPITER_LOCK_PROGRAM_ID,
    ].map((k) => k.toBase58()));
    expect(ix.keys.filter((k) => k.isSigner).map((k) => k.pubkey.toBase58())).toEqual([base.toBase58(), sender.toBase58()]);
    expect(ix.data.subarray(0, 8).equals(instructionDiscriminator('create_vesting_escrow_v2'))).toBe(true);
    expect(ix.data.length).toBe(8 + 50 + 1);
    expect(ix.data[58]).toBe(0);
  });
});

describe('escrow transaction builder', () => {
  it('creates the escrow token account first, then picks v1 for SPL Token and v2 for Token-2022', () => {
    const b = Keypair.generate().publicKey;
    const spl = buildCreateEscrowInstructions({ base: b, payer: sender, payerToken: senderToken, recipient, mint, tokenProgram: TOKEN_PROGRAM_ID, params });
    expect(spl.instructions.map((i) => i.programId.toBase58())).toEqual([ASSOCIATED_TOKEN_PROGRAM_ID.toBase58(), JUPITER_LOCK_PROGRAM_ID.toBase58()]);
    expect(spl.instructions[0]?.data[0]).toBe(1); // CreateIdempotent
    expect(spl.instructions[1]?.data.subarray(0, 8).equals(instructionDiscriminator('create_vesting_escrow'))).toBe(true);
    const t22 = buildCreateEscrowInstructions({ base: b, payer: sender, payerToken: senderToken, recipient, mint, tokenProgram: TOKEN_2022_PROGRAM_ID, params });
    expect(t22.instructions[1]?.data.subarray(0, 8).equals(instructionDiscriminator('create_vesting_escrow_v2'))).toBe(true);
    expect(t22.escrowToken.equals(getAssociatedTokenAddressSync(mint, t22.escrow, true, TOKEN_2022_PROGRAM_ID))).toBe(true);
  });
});

describe('VestingEscrow decoder', () => {
  it('reads recipient, mint, schedule and claimed amount at their zero-copy offsets', () => {
    const data = Buffer.alloc(VESTING_ESCROW_SIZE);
    accountDiscriminator('VestingEscrow').copy(data, 0);
    recipient.toBuffer().copy(data, 8);
    mint.toBuffer().copy(data, 40);
    sender.toBuffer().copy(data, 72);
    base.toBuffer().copy(data, 104);
    data[137] = 2;
    data.writeBigUInt64LE(1_700_000_100n, 144);
    data.writeBigUInt64LE(10n, 152);
    data.writeBigUInt64LE(3n, 160);
    data.writeBigUInt64LE(250_000n, 168);
    data.writeBigUInt64LE(4n, 176);
    data.writeBigUInt64LE(7n, 184);
    data.writeBigUInt64LE(1_700_000_000n, 192);
    const escrow = decodeVestingEscrow(data);
    expect(escrow.recipient.equals(recipient)).toBe(true);
    expect(escrow.tokenMint.equals(mint)).toBe(true);
    expect(escrow.creator.equals(sender)).toBe(true);
    expect(escrow.base.equals(base)).toBe(true);
    expect(escrow).toMatchObject({ updateRecipientMode: 2, cliffTime: 1_700_000_100n, frequency: 10n, cliffUnlockAmount: 3n, amountPerPeriod: 250_000n, numberOfPeriod: 4n, totalClaimedAmount: 7n, vestingStartTime: 1_700_000_000n });
  });

  it('uses the account discriminator mainnet indexers filter escrows by', () => {
    expect([...accountDiscriminator('VestingEscrow')]).toEqual([244, 119, 183, 4, 73, 116, 135, 195]);
  });

  it('rejects data of another account type', () => {
    expect(() => decodeVestingEscrow(Buffer.alloc(VESTING_ESCROW_SIZE))).toThrow(/VestingEscrow/);
  });
});
