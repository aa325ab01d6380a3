import { PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync } from '@solana/spl-token';
import { JUPITER_LOCK_PROGRAM_ID } from '../programIds.js';

/** The vesting escrow PDA: seeds ["escrow", base]. One escrow per base key. */
export function escrowAddress(base: PublicKey, programId: PublicKey = JUPITER_LOCK_PROGRAM_ID): PublicKey {
  return PublicKey.findProgramAddressSync([Buffer.from('escrow'), base.toBuffer()], programId)[0];
}

/** Anchor's `#[event_cpi]` authority PDA: seeds ["__event_authority"]. */
export function eventAuthorityAddress(programId: PublicKey = JUPITER_LOCK_PROGRAM_ID): PublicKey {
  return PublicKey.findProgramAddressSync([Buffer.from('__event_authority')], programId)[0];
}

/** The escrow's token account: the associated token account of the (off-curve) escrow PDA. */
export function escrowTokenAddress(escrow: PublicKey, mint: PublicKey, tokenProgram: PublicKey): PublicKey {
  return getAssociatedTokenAddressSync(mint, escrow, true, tokenProgram);
}
