import { PublicKey, SystemProgram, TransactionInstruction } from '@solana/web3.js';
import { TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { instructionDiscriminator } from '../anchor.js';
import { LayoutWriter } from '../borsh.js';
import { JUPITER_LOCK_PROGRAM_ID } from '../programIds.js';
import { escrowAddress, escrowTokenAddress, eventAuthorityAddress } from './pdas.js';
import type { VestingEscrowParams } from './schedule.js';

/** Accounts for a vesting escrow creation; the escrow and its token account follow from `base`. */
export interface CreateVestingEscrowAccounts {
  base: PublicKey;
  sender: PublicKey;
  senderToken: PublicKey;
  recipient: PublicKey;
  mint: PublicKey;
  tokenProgram: PublicKey;
  programId?: PublicKey;
}

/** Borsh encoding of `CreateVestingEscrowParameters` (6 × u64, 2 × u8). */
export function encodeVestingParams(params: VestingEscrowParams): Buffer {
  return new LayoutWriter()
    .u64(params.vestingStartTime)
    .u64(params.cliffTime)
    .u64(params.frequency)
    .u64(params.cliffUnlockAmount)
    .u64(params.amountPerPeriod)
    .u64(params.numberOfPeriod)
    .u8(params.updateRecipientMode)
    .u8(params.cancelMode)
    .toBuffer();
}

/**
 * `create_vesting_escrow` (SPL Token only): base, escrow, escrow_token, sender, sender_token,
 * recipient, token_program, system_program, then the `#[event_cpi]` pair (event_authority, program).
 * The escrow token account must already exist (the program checks it, it does not create it).
 */
export function createVestingEscrowInstruction(accounts: CreateVestingEscrowAccounts, params: VestingEscrowParams): TransactionInstruction {
  const programId = accounts.programId ?? JUPITER_LOCK_PROGRAM_ID;
  if (!accounts.tokenProgram.equals(TOKEN_PROGRAM_ID)) {
    throw new Error('create_vesting_escrow supports SPL Token only; use create_vesting_escrow_v2');
  }
  const escrow = escrowAddress(accounts.base, programId);
  return new TransactionInstruction({
    programId,
    keys: [
      { pubkey: accounts.base, isSigner: true, isWritable: true },
      { pubkey: escrow, isSigner: false, isWritable: true },
      { pubkey: escrowTokenAddress(escrow, accounts.mint, accounts.tokenProgram), isSigner: false, isWritable: true },
      { pubkey: accounts.sender, isSigner: true, isWritable: true },
      { pubkey: accounts.senderToken, isSigner: false, isWritable: true },
      { pubkey: accounts.recipient, isSigner: false, isWritable: false },
      { pubkey: accounts.tokenProgram, isSigner: false, isWritable: false },
      { pubkey: SystemProgram.programId, isSigner: false, isWritable: false },
      { pubkey: eventAuthorityAddress(programId), isSigner: false, isWritable: false },
      { pubkey: programId, isSigner: false, isWritable: false },
    ],
    data: Buffer.concat([instructionDiscriminator('create_vesting_escrow'), encodeVestingParams(params)]),
  });
}

/**
 * `create_vesting_escrow_v2` (SPL Token and Token-2022): like v1 with the mint after the escrow and
 * a trailing `Option<RemainingAccountsInfo>` = None (no transfer-hook accounts). Creation takes no
 * memo program; only claim/cancel v2 do.
 */
export function createVestingEscrowV2Instruction(accounts: CreateVestingEscrowAccounts, params: VestingEscrowParams): TransactionInstruction {
  const programId = accounts.programId ?? JUPITER_LOCK_PROGRAM_ID;
  const escrow = escrowAddress(accounts.base, programId);
  return new TransactionInstruction({
    programId,
    keys: [
      { pubkey: accounts.base, isSigner: true, isWritable: true },
      { pubkey: escrow, isSigner: false, isWritable: true },
      { pubkey: accounts.mint, isSigner: false, isWritable: false },
      { pubkey: escrowTokenAddress(escrow, accounts.mint, accounts.tokenProgram), isSigner: false, isWritable: true },
      { pubkey: accounts.sender, isSigner: true, isWritable: true },
      { pubkey: accounts.senderToken, isSigner: false, isWritable: true },
      { pubkey: accounts.recipient, isSigner: false, isWritable: false },
      { pubkey: accounts.tokenProgram, isSigner: false, isWritable: false },
      { pubkey: SystemProgram.programId, isSigner: false, isWritable: false },
      { pubkey: eventAuthorityAddress(programId), isSigner: false, isWritable: false },
      { pubkey: programId, isSigner: false, isWritable: false },
    ],
    data: Buffer.concat([instructionDiscriminator('create_vesting_escrow_v2'), encodeVestingParams(params), Buffer.from([0])]),
  });
}

/**
 * `update_vesting_escrow_recipient(new_recipient, new_recipient_email = None)`: hands an escrow to a
 * new recipient, signed by whoever the escrow's `update_recipient_mode` allows (2: the recipient).
 * Accounts: escrow (w), escrow_metadata (optional: the program id for none), signer (s, w), system
 * program, event authority, program. A curve's locked vesting uses it: DBC makes the escrow for the
 * curve's DBC creator (the owner's wallet), which hands it to `vesting.beneficiary` (docs/programs.md).
 */
export function updateVestingEscrowRecipientInstruction(args: { escrow: PublicKey; signer: PublicKey; newRecipient: PublicKey; programId?: PublicKey }): TransactionInstruction {
  const programId = args.programId ?? JUPITER_LOCK_PROGRAM_ID;
  return new TransactionInstruction({
    programId,
    keys: [
      { pubkey: args.escrow, isSigner: false, isWritable: true },
      { pubkey: programId, isSigner: false, isWritable: false },
      { pubkey: args.signer, isSigner: true, isWritable: true },
      { pubkey: SystemProgram.programId, isSigner: false, isWritable: false },
      { pubkey: eventAuthorityAddress(programId), isSigner: false, isWritable: false },
      { pubkey: programId, isSigner: false, isWritable: false },
    ],
    data: Buffer.concat([instructionDiscriminator('update_vesting_escrow_recipient'), args.newRecipient.toBuffer(), Buffer.from([0])]),
  });
}
