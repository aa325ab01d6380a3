import { sql } from 'kysely';
import type { Tx } from '../../db/database.js';
import { insertDeadLetter } from '../../deadLetters/store.js';
import { isPostgres, leaseNow, withoutIndex } from '../../db/dialect.js';
import { OWNER_OF_DELIVERY } from './deliveryQueries.js';

export interface SpentDelivery {
  id: string;
  attempts: number;
}

export interface SpentArgs {
  now: number;
  maxAttempts: number;
  running?: readonly string[];
  limit?: number;
}

/**
 * Fails and dead-letters every delivery whose attempts are spent but that is still pending: its
 * last attempt was claimed and never settled (the dispatcher crashed, or its settle failed) and
 * the lease has expired. Without this the claim would hand out attempt N+1. Each row is failed
 * under the fencing token it was read with, so a settle that lands meanwhile wins. Only leased
 * rows can be spent (a retry is only scheduled while attempts remain), so this reads the small
 * partial index of leased deliveries (migration 004; PostgreSQL: the lease table, migration 048),
 * not the backlog.
 * Runs inside a transaction the caller holds (the dispatcher's settle-and-claim).
 */
export async function failSpentDeliveriesIn(trx: Tx, args: SpentArgs): Promise<SpentDelivery[]> {
  const running = args.running ?? [];
  const spent = await trx
    .selectFrom('deliveries as d')
    // An owner's own events have no launch (their owner is in their key, OWNER_OF_DELIVERY).
    .leftJoin('launches as l', 'l.id', 'd.launch_id')
    .select(['d.id', 'd.launch_id', 'd.event_id', 'd.attempt_count', 'd.lease_token', 'd.last_error'])
    .select(sql<string | null>`${sql.raw(OWNER_OF_DELIVERY)}`.as('owner'))
    .where('d.lease_owner', 'is not', null)
    .where('d.lease_expires_at', '<=', leaseNow(trx, args.now))
    // Not through the status index (SQLite would pick it and read every pending row, the whole
    // backlog): leased rows are found through the small partial index of leases (migration 004).
    .where(sql<string>`${withoutIndex(trx, 'd.status')}`, '=', 'pending')
    .where('d.attempt_count', '>=', args.maxAttempts)
    .$if(running.length > 0, (q) => q.where('d.id', 'not in', running))
    // PostgreSQL has no index of leased rows: they are the lease table's (migration 048).
    .$if(isPostgres(trx), (q) => q.where(sql<boolean>`d.id = any(array(select l.delivery_id from delivery_leases l))`))
    .limit(args.limit ?? 100)
    // PostgreSQL: rows another instance is failing (or settling) right now are left to it.
    .$if(isPostgres(trx), (q) => q.forUpdate(['d']).skipLocked())
    .execute();
  const failed: SpentDelivery[] = [];
  for (const row of spent) {
    const error = `the last attempt was never settled (the dispatcher stopped or its settle failed)`;
    const r = await trx
      .updateTable('deliveries')
      .set({ status: 'failed', lease_owner: null, lease_expires_at: null, last_error: error, completed_at: args.now, updated_at: args.now })
      .where('id', '=', row.id)
      .where('lease_token', '=', row.lease_token)
      .where('status', '=', 'pending')
      .where(sql<boolean>`lease_expires_at <= ${leaseNow(trx, args.now)}`)
      .executeTakeFirst();
    if (r.numUpdatedRows === 0n) continue;
    await insertDeadLetter(trx, {
      kind: 'delivery',
      owner: row.owner ?? '',
      launchId: row.launch_id,
      deliveryId: row.id,
      eventId: row.event_id,
      errorCode: 'delivery_failed',
      errorMessage: `${row.attempt_count} attempts made; ${error}${row.last_error ? `; last recorded error: ${row.last_error}` : ''}`,
      now: args.now,
    });
    failed.push({ id: row.id, attempts: row.attempt_count });
  }
  return failed;
}
