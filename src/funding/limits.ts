import { sql } from 'kysely';
import type { DbOrTx } from '../db/database.js';
import type { FundingWalletRow } from '../db/schema.js';

/** An owner's limits (docs/api.md, "Funding"); `null` is no limit. Lamports are exact bigints. */
export interface FundingLimits {
  maxLamportsPerLaunch: bigint | null;
  maxLamportsPerDay: bigint | null;
  maxLaunchesPerDay: number | null;
  lowBalanceLamports: bigint | null;
}

/** The largest limit a bigint column holds (2^63 − 1 lamports, beyond all SOL there is). */
export const MAX_LIMIT_LAMPORTS = 2n ** 63n - 1n;

const lamports = (v: number | bigint | string | null) => (v === null ? null : BigInt(v));

/** The limits of a wallet row (its lamports read as text, wallets.ts `selectWallets`): exact. */
export function limitsOf(wallet: Pick<FundingWalletRow, 'max_lamports_per_launch' | 'max_lamports_per_day' | 'max_launches_per_day' | 'low_balance_lamports'>): FundingLimits {
  return {
    maxLamportsPerLaunch: lamports(wallet.max_lamports_per_launch),
    maxLamportsPerDay: lamports(wallet.max_lamports_per_day),
    maxLaunchesPerDay: wallet.max_launches_per_day === null ? null : Number(wallet.max_launches_per_day),
    lowBalanceLamports: lamports(wallet.low_balance_lamports),
  };
}

/** The owner's limits, exactly: the bigint columns read as text (a JS number rounds from 2^53 on). */
export async function readLimits(db: DbOrTx, owner: string): Promise<FundingLimits | undefined> {
  const row = await db
    .selectFrom('funding_wallets')
    .select([
      sql<string | null>`cast(max_lamports_per_launch as text)`.as('max_lamports_per_launch'),
      sql<string | null>`cast(max_lamports_per_day as text)`.as('max_lamports_per_day'),
      'max_launches_per_day',
      sql<string | null>`cast(low_balance_lamports as text)`.as('low_balance_lamports'),
    ])
    .where('owner', '=', owner)
    .executeTakeFirst();
  return row ? limitsOf(row as never) : undefined;
}

/**
 * Sets the given limits of the owner's existing wallet (`null` clears one; the others stay) and
 * returns them all. Needs only the database, so `npm run keys -- limits` shares it with the API.
 * Amounts are bound as bigints: stored exactly on SQLite and PostgreSQL.
 */
export async function writeLimits(db: DbOrTx, owner: string, limits: Partial<FundingLimits>, now: number): Promise<FundingLimits> {
  const set: Record<string, bigint | number | null> = {};
  if (limits.maxLamportsPerLaunch !== undefined) set.max_lamports_per_launch = limits.maxLamportsPerLaunch;
  if (limits.maxLamportsPerDay !== undefined) set.max_lamports_per_day = limits.maxLamportsPerDay;
  if (limits.maxLaunchesPerDay !== undefined) set.max_launches_per_day = limits.maxLaunchesPerDay;
  if (limits.lowBalanceLamports !== undefined) set.low_balance_lamports = limits.lowBalanceLamports;
  await db.updateTable('funding_wallets').set({ ...set, updated_at: now }).where('owner', '=', owner).execute();
  const read = await readLimits(db, owner);
  if (!read) throw new Error(`${owner} has no funding wallet`);
  return read;
}
