import { PublicKey } from '@solana/web3.js';
import { accountDiscriminator, hasDiscriminator } from '../anchor.js';
import { LayoutReader } from '../borsh.js';

/** Size of a `VestingEscrow` account: 8-byte discriminator + 288 bytes of zero-copy state. */
export const VESTING_ESCROW_SIZE = 8 + 288;

/** The fields of a Jupiter Lock `VestingEscrow` this service reads back. */
export interface VestingEscrowAccount {
  recipient: PublicKey;
  tokenMint: PublicKey;
  creator: PublicKey;
  base: PublicKey;
  updateRecipientMode: number;
  cancelMode: number;
  tokenProgramFlag: number;
  cliffTime: bigint;
  frequency: bigint;
  cliffUnlockAmount: bigint;
  amountPerPeriod: bigint;
  numberOfPeriod: bigint;
  totalClaimedAmount: bigint;
  vestingStartTime: bigint;
  cancelledAt: bigint;
}

const DISCRIMINATOR = accountDiscriminator('VestingEscrow');

/** Decodes a `VestingEscrow` account (`#[repr(C)]` zero-copy layout); throws on foreign data. */
export function decodeVestingEscrow(data: Uint8Array): VestingEscrowAccount {
  if (!hasDiscriminator(data, DISCRIMINATOR)) throw new Error('not a Jupiter Lock VestingEscrow account');
  const r = new LayoutReader(data);
  if (r.length < VESTING_ESCROW_SIZE) throw new Error(`VestingEscrow account too short: ${r.length} bytes`);
  const key = (offset: number): PublicKey => new PublicKey(r.bytes(offset, 32));
  return {
    recipient: key(8),
    tokenMint: key(40),
    creator: key(72),
    base: key(104),
    // 136: escrow_bump
    updateRecipientMode: r.u8(137),
    cancelMode: r.u8(138),
    tokenProgramFlag: r.u8(139),
    // 140..144: padding
    cliffTime: r.u64(144),
    frequency: r.u64(152),
    cliffUnlockAmount: r.u64(160),
    amountPerPeriod: r.u64(168),
    numberOfPeriod: r.u64(176),
    totalClaimedAmount: r.u64(184),
    vestingStartTime: r.u64(192),
    cancelledAt: r.u64(200),
  };
}
