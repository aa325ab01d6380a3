import { sql } from 'kysely';
import type { DbOrTx } from '../../db/database.js';
import type { DeliveryRow } from '../../db/schema.js';
import { isPostgres } from '../../db/dialect.js';
import type { ClaimArgs, SendAllowance } from './claimArgs.js';
import { claimedRowOf, claimWithFunctionPg, type ClaimedRow } from './claimFunctionPg.js';
import { claimLanesSqlite } from './claimLanesSqlite.js';
import { claimTrial } from './claimTrial.js';

export type { ClaimArgs, SendAllowance } from './claimArgs.js';
export { CLAIM_PARAMS_PG, claimFunctionParams, claimWithFunctionPg, type ClaimedRow, type ClaimedRowPg } from './claimFunctionPg.js';

/**
 * Leases due deliveries with `UPDATE … RETURNING`: pending, due, not leased (or the lease expired,
 * so a crashed dispatcher's work is reclaimed), within the host's and the endpoint's lease room (the
 * in-flight cap plus `prefetch`), the owner's send allowance at each reached endpoint to `allowances`,
 * and shared fairly by owner and, within an owner, by endpoint (docs/architecture.md, "Limits and
 * fairness"). Claiming counts the attempt, so a crash mid-attempt still consumes it, and bumps the
 * fencing token that the settle must name. A delivery whose attempts are spent is not a candidate:
 * it is failed and dead-lettered by `failSpentDeliveriesIn` instead, so no claim ever hands out
 * attempt N+1.
 *
 * The cost does not grow with the backlog. The lanes with pending work — one per (endpoint, owner) —
 * are found by skipping through the (status, endpoint, owner, next_attempt_at) index one lane at a
 * time, with each lane's earliest pending due time; live leases (every dispatcher's) are counted per
 * host and endpoint from a partial index (migration 022; PostgreSQL: the lease table, migration 048).
 * `shareSlots` then hands the free slots out one at a time: to the owner holding the fewest, within
 * it to the endpoint given the fewest, never past an owner's, endpoint's or host's cap. Each lane
 * given slots has its earliest due deliveries leased in index order. The stages, one file each:
 * - the ordinary claim on PostgreSQL: one function call, sql/claimFunctionPg.ts;
 * - the ordinary claim on SQLite, in the dispatcher's write transaction: sql/claimLanesSqlite.ts;
 * - the half-open trial, both databases: sql/claimTrial.ts;
 * - what they share (live lease counts, what is due): sql/claimDue.ts.
 */
export async function claimDueDeliveries(db: DbOrTx, args: ClaimArgs, allowances?: SendAllowance[]): Promise<ClaimedRow[]> {
  if (args.limit <= 0) return [];
  if (!isPostgres(db) || args.onlyEndpoint !== undefined) return claimRows(db, args, allowances);
  return (await claimWithFunctionPg(db, args, allowances)).map((row) => claimedRowOf(row, args.owner));
}

/**
 * The claims that return whole delivery rows: SQLite's ordinary claim and the half-open trial (both
 * databases). {@link claimDueDeliveries} tells them apart.
 */
export async function claimRows(db: DbOrTx, args: ClaimArgs, allowances?: SendAllowance[]): Promise<DeliveryRow[]> {
  if (args.limit <= 0) return [];
  if (!isPostgres(db)) return args.onlyEndpoint === undefined ? claimLanesSqlite(db, args, allowances) : claimTrial(db, args, args.onlyEndpoint, allowances);
  if (args.onlyEndpoint === undefined) throw new Error('claimRows: PostgreSQL\'s ordinary claim is claimWithFunctionPg');
  const endpoint = args.onlyEndpoint;
  // PostgreSQL, several instances: the per-host cap counts every instance's live leases, which two
  // claims running at once would not see of each other. The claim function takes the claim lock
  // shared and its hosts' locks (migration 051: claims contend per host); a half-open trial takes
  // the claim lock exclusively (held to commit, a few ms, and rare), so it sees the leases of every
  // claim before it; SKIP LOCKED still keeps them clear of rows others are settling.
  if (db.isTransaction) {
    await lockClaims(db);
    return claimTrial(db, args, endpoint, allowances);
  }
  return db.transaction().execute(async (trx) => {
    await lockClaims(trx);
    return claimTrial(trx, args, endpoint, allowances);
  });
}

/** Any constant both sides agree on (and the claim function, migrations 023-051): the key of the delivery-claim advisory lock. */
const CLAIM_LOCK_KEY = 0x64_6c_76_63; // 'dlvc'

async function lockClaims(trx: DbOrTx): Promise<void> {
  await sql`select pg_advisory_xact_lock(${CLAIM_LOCK_KEY})`.execute(trx);
}
