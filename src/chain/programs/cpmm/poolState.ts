import { PublicKey } from '@solana/web3.js';
import { accountDiscriminator, hasDiscriminator } from '../anchor.js';
import { LayoutReader } from '../borsh.js';

/** `PoolState::LEN` (packed zero-copy): 8 + 10 keys + 5 u8 + 7 u64 + 2 u8 + 6 pad + 2 u64 + 28 u64. */
export const POOL_STATE_SIZE = 8 + 10 * 32 + 5 + 8 * 7 + 2 + 6 + 2 * 8 + 8 * 28;
/** `ObservationState::LEN`: 8 + 1 + 2 + 32 + 100 × 40 + 8 + 3 × 8. */
export const OBSERVATION_STATE_SIZE = 8 + 1 + 2 + 32 + 100 * 40 + 8 + 3 * 8;

/** The pool fields this service reads back. */
export interface PoolStateAccount {
  ammConfig: PublicKey;
  poolCreator: PublicKey;
  token0Vault: PublicKey;
  token1Vault: PublicKey;
  lpMint: PublicKey;
  token0Mint: PublicKey;
  token1Mint: PublicKey;
  token0Program: PublicKey;
  token1Program: PublicKey;
  observationKey: PublicKey;
  status: number;
  lpMintDecimals: number;
  lpSupply: bigint;
  openTime: bigint;
}

const DISCRIMINATOR = accountDiscriminator('PoolState');

/** Decodes a CPMM PoolState (`#[repr(C, packed)]`, so no alignment gaps); throws on foreign data. */
export function decodePoolState(data: Uint8Array): PoolStateAccount {
  if (!hasDiscriminator(data, DISCRIMINATOR)) throw new Error('not a CPMM PoolState account');
  const r = new LayoutReader(data);
  const key = (i: number): PublicKey => new PublicKey(r.bytes(8 + 32 * i, 32));
  return {
    ammConfig: key(0),
    poolCreator: key(1),
    token0Vault: key(2),
    token1Vault: key(3),
    lpMint: key(4),
    token0Mint: key(5),
    token1Mint: key(6),
    token0Program: key(7),
    token1Program: key(8),
    observationKey: key(9),
    // 328: auth_bump
    status: r.u8(329),
    lpMintDecimals: r.u8(330),
    // 331, 332: mint decimals
    lpSupply: r.u64(333),
    // 341..373: protocol and fund fees
    openTime: r.u64(373),
  };
}
