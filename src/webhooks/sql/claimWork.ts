import type { DbOrTx } from '../../db/database.js';
import { isPostgres } from '../../db/dialect.js';
import { claimRows, claimWithFunctionPg, type ClaimArgs, type ClaimedRowPg, type SendAllowance } from './claimDeliveries.js';
import { contextOf, type DeliveryContext } from '../dispatch/deliveryContext.js';
import { loadDeliveryContexts } from './deliveryQueries.js';

/** A claimed delivery with everything its attempt needs: no further read before it is sent. */
export interface ClaimedDelivery {
  id: string;
  launchId: string;
  eventId: string;
  url: string;
  host: string;
  /** The breaker key (webhooks/endpointKey.ts). */
  endpoint: string;
  /** This attempt's number (the claim counted it). */
  attempt: number;
  /** The fencing token of this claim: every write under it names it. */
  token: number;
  leaseExpiresAt: number;
  /** The event body, signing secret(s) and scheme. */
  ctx: DeliveryContext;
}

/** A delivery just committed, described for its first attempt: the dispatcher leases it by id (sql/leaseOffered.ts). */
export type DeliveryOffer = Omit<ClaimedDelivery, 'attempt' | 'token' | 'leaseExpiresAt'>;

/**
 * Claims due deliveries (sql/claimDeliveries.ts: lease, fencing token, attempt counted, per-host
 * cap) and reads what their attempts need — event body, sealed secret(s), scheme, launch owner —
 * for all of them in one more query; the owner's send allowances the claim reports go to
 * `allowances`. Run inside the caller's transaction so the claim and the
 * settles before it share one commit. A claimed row without its event or launch (impossible with
 * the foreign keys) is left leased, to be failed once its attempts are spent.
 */
export async function claimDeliveryWork(db: DbOrTx, args: ClaimArgs, allowances?: SendAllowance[]): Promise<ClaimedDelivery[]> {
  if (args.onlyEndpoint === undefined && isPostgres(db)) return claimWorkPg(db, args, allowances);
  const rows = await claimRows(db, args, allowances);
  if (rows.length === 0) return [];
  const contexts = await loadDeliveryContexts(
    db,
    rows.map((r) => r.id),
  );
  // Due time, then creation, then the event's sequence: deliveries of one launch committed at the
  // same moment go out in event order (SQLite would return them so anyway, PostgreSQL in any order).
  const seq = (id: string) => contexts.get(id)?.sequence ?? 0;
  rows.sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.created_at - b.created_at || seq(a.id) - seq(b.id));
  const claimed: ClaimedDelivery[] = [];
  for (const row of rows) {
    const ctx = contexts.get(row.id);
    if (!ctx) continue;
    claimed.push({
      id: row.id,
      launchId: row.launch_id,
      eventId: row.event_id,
      url: row.url,
      host: row.host,
      endpoint: row.endpoint,
      attempt: row.attempt_count,
      token: row.lease_token,
      // On the caller's lease clock: on PostgreSQL the row's deadline is on the database's clock
      // (src/db/dialect.ts), which this process's clock need not agree with; on SQLite the two are equal.
      leaseExpiresAt: args.now + args.leaseMs,
      ctx,
    });
  }
  return claimed;
}

/** PostgreSQL: the claim and the read of what the attempts need in one round trip (claimWithFunctionPg), in the order it returns them. */
async function claimWorkPg(db: DbOrTx, args: ClaimArgs, allowances?: SendAllowance[]): Promise<ClaimedDelivery[]> {
  return claimedOfRows(await claimWithFunctionPg(db, args, allowances), args);
}

/** The claimed deliveries of PostgreSQL claim function rows (a row without its event or launch is left leased, as in claimDeliveryWork). */
export function claimedOfRows(rows: readonly ClaimedRowPg[], args: ClaimArgs): ClaimedDelivery[] {
  const claimed: ClaimedDelivery[] = [];
  for (const row of rows) {
    if (row.id === null || row.event === null || row.body === null || row.sequence === null) continue;
    const ctx = contextOf({ ...row, owner: row.ctx_owner, event: row.event, body: row.body, sequence: row.sequence });
    if (!ctx) continue;
    claimed.push({
      id: row.id,
      launchId: row.launch_id,
      eventId: row.event_id,
      url: row.url,
      host: row.host,
      endpoint: row.endpoint,
      attempt: row.attempt_count,
      token: row.lease_token,
      leaseExpiresAt: args.now + args.leaseMs,
      ctx,
    });
  }
  return claimed;
}
