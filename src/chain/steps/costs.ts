import { ACCOUNT_SIZE, ExtensionType, getAccountLen, MINT_SIZE } from '@solana/spl-token';
import type { ChainBackend } from '../backend.js';
import { VESTING_ESCROW_SIZE } from '../programs/jupiterLock/escrowAccount.js';
import { OBSERVATION_STATE_SIZE, POOL_STATE_SIZE } from '../programs/cpmm/poolState.js';

/** Account sizes of the governance accounts the DAO step creates (program version 3, no council). */
export const GOVERNANCE_SIZES = {
  /** RealmV2 without council: fixed part plus the name's UTF-8 bytes. */
  realm: (name: string) => 264 + Buffer.byteLength(name, 'utf8'),
  realmConfig: 293,
  governance: 236,
  /** The native treasury is a plain system account. */
  nativeTreasury: 0,
} as const;

type Rent = ChainBackend['getMinimumBalanceForRentExemption'];

/** Token account size for a standard: Token-2022 ATAs carry the ImmutableOwner extension. */
export function tokenAccountSize(tokenStandard: 'spl-token' | 'token-2022'): number {
  return tokenStandard === 'token-2022' ? getAccountLen([ExtensionType.ImmutableOwner]) : ACCOUNT_SIZE;
}

/** Rent the vesting step locks: the escrow and its token account. */
export async function vestingRentLamports(rent: Rent, tokenStandard: 'spl-token' | 'token-2022'): Promise<number> {
  return (await rent(VESTING_ESCROW_SIZE)) + (await rent(tokenAccountSize(tokenStandard)));
}

/** Rent the DAO step locks: realm, realm config, token holding, governance, native treasury, treasury ATA. */
export async function daoRentLamports(rent: Rent, realmName: string): Promise<number> {
  const sizes = [
    GOVERNANCE_SIZES.realm(realmName),
    GOVERNANCE_SIZES.realmConfig,
    ACCOUNT_SIZE,
    GOVERNANCE_SIZES.governance,
    GOVERNANCE_SIZES.nativeTreasury,
    ACCOUNT_SIZE,
  ];
  let total = 0;
  for (const size of sizes) total += await rent(size);
  return total;
}

/**
 * Lamports the pool step needs at its peak besides fees: rent of pool state, observation, LP mint,
 * two vaults, the payer's LP and WSOL accounts and the recipient's LP account, plus the quote SOL
 * and the pool-creation fee. (The payer's LP and WSOL rent comes back in the same transaction.)
 */
export async function poolLamports(
  rent: Rent,
  tokenStandard: 'spl-token' | 'token-2022',
  quoteLamports: bigint,
  createPoolFee: bigint,
): Promise<number> {
  const sizes = [POOL_STATE_SIZE, OBSERVATION_STATE_SIZE, MINT_SIZE, tokenAccountSize(tokenStandard), ACCOUNT_SIZE, ACCOUNT_SIZE, ACCOUNT_SIZE, ACCOUNT_SIZE];
  let total = 0;
  for (const size of sizes) total += await rent(size);
  return total + Number(quoteLamports + createPoolFee);
}
