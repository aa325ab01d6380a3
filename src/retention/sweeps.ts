import { sql } from 'kysely';
import type { Db, Tx } from '../db/database.js';
import { isPostgres } from '../db/dialect.js';

/**
 * The retention sweep's deletions (docs/architecture.md, "Retention"), one bounded batch each, each
 * in one short transaction. Every batch re-checks, inside its transaction, that what it deletes is
 * past retention and that nothing still needs it: an event with a delivery not yet settled, a dead
 * letter still open, a launch in flight, a watch still active. The chain's own state (accounts and
 * transaction records) and anything outside these tables is never touched.
 */

/** Tables the sweep reads that the service's `Database` type leaves to their own folders. */
type SweptTables = {
  watches: { id: string; launch_id: string; address: string; state: string; updated_at: number };
  watch_reported: { launch_id: string; event_id: string };
  chain_address_signatures: { address: string; seq: number; signature: string };
};

/** Launch statuses in which a launch is still being worked on: nothing of it is deleted. */
const IN_FLIGHT = ['awaiting_signatures', 'queued', 'processing'] as const;
/** Delivery statuses that may still send: the event stays. */
const UNSETTLED = ['pending', 'paused'] as const;

/**
 * One instance sweeps at a time on PostgreSQL (a transaction-scoped advisory lock, taken without
 * waiting: an instance that finds it held skips that sweep, and says so); on SQLite one process owns the file.
 */
const SWEEP_LOCK = 31_031_031;

async function takeSweepLock(trx: Tx): Promise<boolean> {
  if (!isPostgres(trx)) return true;
  const row = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${SWEEP_LOCK}) as locked`.execute(trx);
  return row.rows[0]?.locked === true;
}

/** What a sweep deleted, or {@link SKIPPED} when another instance holds the sweep lock. */
export type SweepResult = number | typeof SKIPPED;
export const SKIPPED = null;

function inTransaction(db: Db, run: (trx: Tx) => Promise<number>): Promise<SweepResult> {
  return db.transaction().execute(async (trx) => ((await takeSweepLock(trx)) ? run(trx) : SKIPPED));
}

/** Dead letters retried or resolved before `cutoff`. */
export function sweepClosedDeadLetters(db: Db, args: { cutoff: number; limit: number }): Promise<SweepResult> {
  return inTransaction(db, async (trx) => {
    const ids = await trx
      .selectFrom('dead_letters')
      .select('id')
      .where('status', 'in', ['retried', 'resolved'])
      .where('updated_at', '<', args.cutoff)
      .orderBy('updated_at')
      .limit(args.limit)
      .execute();
    if (ids.length === 0) return 0;
    const r = await trx
      .deleteFrom('dead_letters')
      .where('id', 'in', ids.map((row) => row.id))
      .where('status', '<>', 'open')
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  });
}

/**
 * Events created before `cutoff` whose every delivery settled before it (delivered, failed with its
 * dead letter closed before it, or canceled), of a launch not in flight, with their deliveries and
 * attempts. On PostgreSQL the events are locked first, so a redelivery cannot attach a new delivery
 * to one between the check and the delete.
 */
export function sweepSettledEvents(db: Db, args: { cutoff: number; limit: number }): Promise<SweepResult> {
  return inTransaction(db, async (trx) => {
    const { cutoff } = args;
    const rows = await trx
      .selectFrom('outbox_events as e')
      .select('e.id')
      .where('e.created_at', '<', cutoff)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('deliveries as d')
              .select('d.id')
              .whereRef('d.event_id', '=', 'e.id')
              .where((eb) => eb.or([eb('d.status', 'in', UNSETTLED), eb('d.updated_at', '>=', cutoff)])),
          ),
        ),
      )
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('dead_letters as dl')
              .select('dl.id')
              .whereRef('dl.event_id', '=', 'e.id')
              .where((eb) => eb.or([eb('dl.status', '=', 'open'), eb('dl.updated_at', '>=', cutoff)])),
          ),
        ),
      )
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom('launches as l').select('l.id').whereRef('l.id', '=', 'e.launch_id').where('l.status', 'in', IN_FLIGHT))),
      )
      .orderBy('e.created_at')
      .limit(args.limit)
      .$if(isPostgres(trx), (q) => q.forUpdate().skipLocked())
      .execute();
    if (rows.length === 0) return 0;
    const ids = rows.map((row) => row.id);
    await trx
      .deleteFrom('delivery_attempts')
      .where('delivery_id', 'in', (eb) => eb.selectFrom('deliveries').select('id').where('event_id', 'in', ids))
      .execute();
    await trx.deleteFrom('deliveries').where('event_id', 'in', ids).execute();
    const r = await trx.deleteFrom('outbox_events').where('id', 'in', ids).executeTakeFirst();
    return Number(r.numDeletedRows);
  });
}

/**
 * Watches that ended before `cutoff`, with the chain history index of their address (unless another
 * watch follows it) and, once a launch has no watch left, the keys of what its watches reported.
 * `limit` bounds the rows of every statement: a busy address's index is deleted over several
 * batches, its watch last.
 */
export function sweepEndedWatches(db: Db, args: { cutoff: number; limit: number }): Promise<SweepResult> {
  return inTransaction(db, async (trx) => {
    const t = trx.withTables<SweptTables>();
    const watches = await t
      .selectFrom('watches')
      .select(['id', 'launch_id', 'address'])
      .where('state', '=', 'ended')
      .where('updated_at', '<', args.cutoff)
      .orderBy('updated_at')
      .limit(args.limit)
      .execute();
    let deleted = 0;
    for (const watch of watches) {
      if (deleted >= args.limit) break;
      const shared = await t.selectFrom('watches').select('id').where('address', '=', watch.address).where('id', '<>', watch.id).limit(1).executeTakeFirst();
      if (shared === undefined) {
        const budget = args.limit - deleted;
        const r = await t
          .deleteFrom('chain_address_signatures')
          .where('address', '=', watch.address)
          .where('seq', 'in', (eb) => eb.selectFrom('chain_address_signatures').select('seq').where('address', '=', watch.address).orderBy('seq').limit(budget))
          .executeTakeFirst();
        const n = Number(r.numDeletedRows);
        deleted += n;
        if (n >= budget) break; // more of this address's index next batch; the watch goes last
      }
      await t.deleteFrom('watches').where('id', '=', watch.id).where('state', '=', 'ended').execute();
      deleted += 1;
      const r = await t
        .deleteFrom('watch_reported')
        .where('launch_id', '=', watch.launch_id)
        .where(({ not, exists, selectFrom }) => not(exists(selectFrom('watches').select('id').where('launch_id', '=', watch.launch_id))))
        .executeTakeFirst();
      deleted += Number(r.numDeletedRows);
    }
    return deleted;
  });
}

/** Dashboard sessions that expired before `cutoff`. */
export function sweepExpiredSessions(db: Db, args: { cutoff: number; limit: number }): Promise<SweepResult> {
  return inTransaction(db, async (trx) => {
    const r = await trx
      .deleteFrom('dashboard_sessions')
      .where('id_hash', 'in', (eb) => eb.selectFrom('dashboard_sessions').select('id_hash').where('expires_at', '<', args.cutoff).limit(args.limit))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  });
}

/** Rate-limit windows that started before `cutoff`. */
export function sweepRateLimitWindows(db: Db, args: { cutoff: number; limit: number }): Promise<SweepResult> {
  return inTransaction(db, async (trx) => {
    const r = await trx
      .deleteFrom('rate_limit_windows')
      .where('window_start', '<', args.cutoff)
      .where('subject', 'in', (eb) => eb.selectFrom('rate_limit_windows').select('subject').where('window_start', '<', args.cutoff).limit(args.limit))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  });
}

/**
 * Launches that ended (complete or failed) before `cutoff` and have nothing left in the other
 * swept tables — no event (so no delivery), no watch, no dead letter — with their steps,
 * signing state (creator-signed launches) and idempotency keys. Only with `LAUNCH_RETENTION` set: launches are the customer's record.
 */
export function sweepEndedLaunches(db: Db, args: { cutoff: number; limit: number }): Promise<SweepResult> {
  return inTransaction(db, async (trx) => {
    const t = trx.withTables<SweptTables>();
    const rows = await t
      .selectFrom('launches as l')
      .select('l.id')
      .where('l.status', 'in', ['complete', 'failed'])
      .where('l.created_at', '<', args.cutoff)
      .where('l.updated_at', '<', args.cutoff)
      .where(({ not, exists, selectFrom }) => not(exists(selectFrom('outbox_events as e').select('e.id').whereRef('e.launch_id', '=', 'l.id'))))
      .where(({ not, exists, selectFrom }) => not(exists(selectFrom('watches as w').select('w.id').whereRef('w.launch_id', '=', 'l.id'))))
      .where(({ not, exists, selectFrom }) => not(exists(selectFrom('dead_letters as dl').select('dl.id').whereRef('dl.launch_id', '=', 'l.id'))))
      .orderBy('l.created_at')
      .limit(args.limit)
      .$if(isPostgres(trx), (q) => q.forUpdate().skipLocked())
      .execute();
    if (rows.length === 0) return 0;
    const ids = rows.map((row) => row.id);
    await trx.deleteFrom('idempotency_keys').where('launch_id', 'in', ids).execute();
    await trx.deleteFrom('launch_steps').where('launch_id', 'in', ids).execute();
    await trx.withTables<{ curve_migrations: { launch_id: string } }>().deleteFrom('curve_migrations').where('launch_id', 'in', ids).execute();
    await trx.withTables<{ fee_claims: { launch_id: string } }>().deleteFrom('fee_claims').where('launch_id', 'in', ids).execute();
    await trx.deleteFrom('launch_signing_txs').where('launch_id', 'in', ids).execute();
    await trx.deleteFrom('launch_signing').where('launch_id', 'in', ids).execute();
    const r = await trx.deleteFrom('launches').where('id', 'in', ids).where('status', 'in', ['complete', 'failed']).executeTakeFirst();
    return Number(r.numDeletedRows);
  });
}
