import { ACCOUNT_SIZE, MINT_SIZE } from '@solana/spl-token';
import type { ChainBackend } from '../backend.js';
import { mintLenWithTokenMetadata } from '../programs/token2022/tokenMetadata.js';
import { tokenAccountSize } from './costs.js';
import { curvePoolOf, type LaunchPlan } from './types.js';

/** DBC's PoolConfig and VirtualPool account sizes (program 0.1.x). */
export const DBC_CONFIG_SIZE = 1048;
export const DBC_POOL_SIZE = 424;
/** Metaplex metadata at its largest, which CreateMetadataAccountV3 allocates whole, and its protocol fee. */
const METAPLEX_METADATA_MAX_SIZE = 679;
const METAPLEX_CREATE_FEE_LAMPORTS = 10_000_000;
/** Token-2022 mint with MetadataPointer before the metadata is written (what DBC allocates first). */
const TOKEN_2022_MINT_WITH_POINTER = 234;
/** A Token-2022 vault DBC creates: no extension, so no account type byte (165 bytes, read back from the chain). */
const TOKEN_2022_VAULT = 165;

/** One account create_curve creates, for the quote (docs/funding.md). */
export interface CurveAccount {
  role: string;
  bytes: number;
  returned?: true;
}

/** The accounts of each of create_curve's two transactions. */
export function curveAccounts(plan: Pick<LaunchPlan, 'tokenStandard' | 'name' | 'ticker' | 'uri' | 'pool'>): { config: CurveAccount[]; pool: CurveAccount[] } {
  const is2022 = plan.tokenStandard === 'token-2022';
  const mintBytes = is2022 ? mintLenWithTokenMetadata(TOKEN_2022_MINT_WITH_POINTER, { name: plan.name, symbol: plan.ticker, uri: plan.uri }) : MINT_SIZE;
  const pool: CurveAccount[] = [
    { role: 'curve_pool', bytes: DBC_POOL_SIZE },
    { role: 'mint', bytes: mintBytes },
    { role: 'curve_base_vault', bytes: is2022 ? TOKEN_2022_VAULT : ACCOUNT_SIZE },
    { role: 'curve_quote_vault', bytes: ACCOUNT_SIZE },
  ];
  if (!is2022) pool.push({ role: 'metadata', bytes: METAPLEX_METADATA_MAX_SIZE });
  // The first buy opens the creator's token account and the payer's wrapped SOL (closed in the same transaction).
  if (curvePoolOf(plan)?.firstBuy) pool.push({ role: 'creator_token_account', bytes: tokenAccountSize(plan.tokenStandard) }, { role: 'payer_wsol_account', bytes: ACCOUNT_SIZE, returned: true });
  return { config: [{ role: 'curve_config', bytes: DBC_CONFIG_SIZE }], pool };
}

/** Lamports besides rent and fees: Metaplex's create fee on spl-token (the first buy is counted apart). */
export function curveOtherLamports(plan: Pick<LaunchPlan, 'tokenStandard'>): number {
  return plan.tokenStandard === 'spl-token' ? METAPLEX_CREATE_FEE_LAMPORTS : 0;
}

/** What each transaction locks at its peak besides fees and the first buy: rent (and Metaplex's fee). */
export async function curveLaunchCosts(rent: ChainBackend['getMinimumBalanceForRentExemption'], plan: Pick<LaunchPlan, 'tokenStandard' | 'name' | 'ticker' | 'uri' | 'pool'>): Promise<{ config: number; pool: number }> {
  const accounts = curveAccounts(plan);
  const sum = async (list: CurveAccount[]) => {
    let total = 0;
    for (const a of list) total += await rent(a.bytes);
    return total;
  };
  return { config: await sum(accounts.config), pool: (await sum(accounts.pool)) + curveOtherLamports(plan) };
}

/** DAMM v2 accounts the graduation creates (sizes as the program 0.1.x allocates them; measured on the embedded chain). */
const DAMM_V2_POOL_SIZE = 1112;
const DAMM_V2_POSITION_SIZE = 408;
/** The position NFT: a Token-2022 mint with its metadata extension, and its token account. */
const DAMM_V2_POSITION_NFT_MINT_SIZE = 465;
/** The graduation transaction's signatures: the payer and the two position NFT mint keys (the second signs even when no partner position is made). */
export const CURVE_MIGRATION_SIGNATURES = 3;

/**
 * What the graduation (`migration_damm_v2`, run by the service when the curve is full) creates and
 * the owner's funding wallet pays: the DAMM v2 pool, its two vaults, the creator's locked position
 * and its NFT mint and account. DBC's flash rent is paid back in the same transaction.
 */
export function curveMigrationAccounts(): CurveAccount[] {
  return [
    { role: 'amm_pool', bytes: DAMM_V2_POOL_SIZE },
    { role: 'amm_base_vault', bytes: ACCOUNT_SIZE },
    { role: 'amm_quote_vault', bytes: ACCOUNT_SIZE },
    { role: 'amm_position', bytes: DAMM_V2_POSITION_SIZE },
    { role: 'amm_position_nft_mint', bytes: DAMM_V2_POSITION_NFT_MINT_SIZE },
    { role: 'amm_position_nft_account', bytes: ACCOUNT_SIZE },
  ];
}

/** Jupiter Lock's escrow account (`VestingEscrow`, zero-copy). */
const VESTING_ESCROW_SIZE = 296;

/**
 * With locked vesting the graduation first sends DBC's `create_locker` (the escrow and its token
 * account) and then hands the escrow to the beneficiary: two more transactions of one signature.
 */
export function curveLockerAccounts(plan: Pick<LaunchPlan, 'tokenStandard'>): CurveAccount[] {
  return [
    { role: 'vesting_escrow', bytes: VESTING_ESCROW_SIZE },
    { role: 'vesting_escrow_token_account', bytes: tokenAccountSize(plan.tokenStandard) },
  ];
}
