import type { DbOrTx } from '../db/database.js';
import type { FundingWalletRow } from '../db/schema.js';

/** An owner's limits (docs/api.md, "Funding"); `null` is no limit. */
export interface FundingLimits {
  maxLamportsPerLaunch: number | null;
  maxLamportsPerDay: number | null;
  maxLaunchesPerDay: number | null;
  lowBalanceLamports: number | null;
}

export function limitsOf(wallet: FundingWalletRow): FundingLimits {
  const n = (v: number | bigint | string | null) => (v === null ? null : Number(v));
  return {
    maxLamportsPerLaunch: n(wallet.max_lamports_per_launch),
    maxLamportsPerDay: n(wallet.max_lamports_per_day),
    maxLaunchesPerDay: n(wallet.max_launches_per_day),
    lowBalanceLamports: n(wallet.low_balance_lamports),
  };
}

/**
 * Sets the given limits of the owner's existing wallet (`null` clears one; the others stay) and
 * returns them all. Needs only the database, so `npm run keys -- limits` shares it with the API.
 */
export async function writeLimits(db: DbOrTx, owner: string, limits: Partial<FundingLimits>, now: number): Promise<FundingLimits> {
  const set: Record<string, number | null> = {};
  if (limits.maxLamportsPerLaunch !== undefined) set.max_lamports_per_launch = limits.maxLamportsPerLaunch;
  if (limits.maxLamportsPerDay !== undefined) set.max_lamports_per_day = limits.maxLamportsPerDay;
  if (limits.maxLaunchesPerDay !== undefined) set.max_launches_per_day = limits.maxLaunchesPerDay;
  if (limits.lowBalanceLamports !== undefined) set.low_balance_lamports = limits.lowBalanceLamports;
  await db.updateTable('funding_wallets').set({ ...set, updated_at: now }).where('owner', '=', owner).execute();
  const row = await db.selectFrom('funding_wallets').selectAll().where('owner', '=', owner).executeTakeFirst();
  if (!row) throw new Error(`${owner} has no funding wallet`);
  return limitsOf(row);
}
