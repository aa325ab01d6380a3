import { PublicKey, TransactionInstruction } from '@solana/web3.js';
import { createAssociatedTokenAccountIdempotentInstruction, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { JUPITER_LOCK_PROGRAM_ID } from '../programIds.js';
import { createVestingEscrowInstruction, createVestingEscrowV2Instruction } from './instructions.js';
import { escrowAddress, escrowTokenAddress } from './pdas.js';
import type { VestingEscrowParams } from './schedule.js';

/** A vesting escrow for the launched mint, funded from the payer's account. */
export interface CreateEscrowRequest {
  base: PublicKey;
  payer: PublicKey;
  payerToken: PublicKey;
  recipient: PublicKey;
  mint: PublicKey;
  tokenProgram: PublicKey;
  params: VestingEscrowParams;
  programId?: PublicKey;
}

/**
 * One transaction, signed by the payer and the base key: create the escrow's token account
 * (idempotent — the program requires it to exist), then the escrow. SPL Token mints use
 * `create_vesting_escrow`; Token-2022 mints need `create_vesting_escrow_v2`, which takes the mint
 * and the token program explicitly.
 */
export function buildCreateEscrowInstructions(request: CreateEscrowRequest): {
  instructions: TransactionInstruction[];
  escrow: PublicKey;
  escrowToken: PublicKey;
} {
  const programId = request.programId ?? JUPITER_LOCK_PROGRAM_ID;
  const escrow = escrowAddress(request.base, programId);
  const escrowToken = escrowTokenAddress(escrow, request.mint, request.tokenProgram);
  const accounts = {
    base: request.base,
    sender: request.payer,
    senderToken: request.payerToken,
    recipient: request.recipient,
    mint: request.mint,
    tokenProgram: request.tokenProgram,
    programId,
  };
  const create = request.tokenProgram.equals(TOKEN_PROGRAM_ID)
    ? createVestingEscrowInstruction(accounts, request.params)
    : createVestingEscrowV2Instruction(accounts, request.params);
  return {
    instructions: [
      createAssociatedTokenAccountIdempotentInstruction(request.payer, escrowToken, escrow, request.mint, request.tokenProgram),
      create,
    ],
    escrow,
    escrowToken,
  };
}
