import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import { isPostgres, jsonText } from '../db/dialect.js';

// The webhook and launch counters are read from the append-only tables (attempts, outbox events)
// rather than counted in the dispatcher and runner: the numbers survive restarts, cannot drift from
// what the database says happened, and no hot loop carries metrics code. Each read continues after
// the last rowid known to have no gap below it (appendCursor.ts), so a scrape costs what happened
// since the previous one.

/** PostgreSQL: the transaction-id horizon of this statement's snapshot (no transaction at or above it had committed). */
const HORIZON_PG = sql`pg_snapshot_xmax(pg_current_snapshot())::text::bigint`;

/**
 * Every transaction below the returned id has ended (PostgreSQL: the `xmin` of a snapshot taken now;
 * SQLite, one writer committing in rowid order: Infinity). See appendCursor.ts.
 */
export async function endedBelow(db: Db): Promise<number> {
  if (!isPostgres(db)) return Number.POSITIVE_INFINITY;
  const { rows } = await sql<{ x: string }>`select pg_snapshot_xmin(pg_current_snapshot())::text as x`.execute(db);
  return Number(rows[0]!.x);
}

export interface AttemptFact {
  rowid: number;
  /** The horizon of the snapshot that read it (0 on SQLite); see appendCursor.ts. */
  horizon: number;
  outcome: string;
  /** Commit of the delivery → end of this attempt, in ms; only for successful attempts. */
  deliveredAfterMs: number | null;
}

/** Delivery attempts recorded after `afterRowid`, oldest first. */
export async function readAttemptsAfter(db: Db, afterRowid: number, limit: number): Promise<AttemptFact[]> {
  const { rows } = await sql<AttemptFact>`
    select a.rowid as rowid, ${isPostgres(db) ? HORIZON_PG : sql`0`} as horizon, a.outcome as outcome,
      case when a.outcome = 'success' then a.started_at + a.duration_ms - d.created_at end as "deliveredAfterMs"
    from delivery_attempts a join deliveries d on d.id = a.delivery_id
    where a.rowid > ${afterRowid} order by a.rowid limit ${limit}`.execute(db);
  return rows;
}

export interface EventFact {
  rowid: number;
  /** As in AttemptFact. */
  horizon: number;
  event: string;
  /** For `launch.step_complete`: the step and its duration in ms (started → completed). */
  step: string | null;
  stepMs: number | null;
}

/** Outbox events recorded after `afterRowid`, oldest first, with the duration of a completed step. */
export async function readEventsAfter(db: Db, afterRowid: number, limit: number): Promise<EventFact[]> {
  const { rows } = await sql<EventFact>`
    select e.rowid as rowid, ${isPostgres(db) ? HORIZON_PG : sql`0`} as horizon, e.event as event, s.name as step, s.completed_at - s.started_at as "stepMs"
    from outbox_events e
    left join launch_steps s on e.event = 'launch.step_complete' and s.launch_id = e.launch_id
      and s.name = ${jsonText(db, sql`e.body`, ['data', 'step'])}
    where e.rowid > ${afterRowid} order by e.rowid limit ${limit}`.execute(db);
  return rows;
}

/** Deliveries still waiting to be delivered (`pending`). */
export async function countPendingDeliveries(db: Db): Promise<number> {
  const row = await db
    .selectFrom('deliveries')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Creator-signed launches waiting for the creator's signatures (docs/signing.md); one step of the (status, run_after) index. */
export async function countAwaitingSignatures(db: Db): Promise<number> {
  const row = await db
    .selectFrom('launches')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', '=', 'awaiting_signatures')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * How far the chain watcher is behind, in ms: how long ago the most overdue active watch was due
 * (0 when none is overdue or nothing is watched). One step of the (state, next_check_at) index.
 */
export async function watchLagMs(db: Db, now: number): Promise<number> {
  const { rows } = await sql<{ due: number | null }>`select min(next_check_at) as due from watches where state = 'active'`.execute(db);
  const due = rows[0]?.due;
  return due === null || due === undefined ? 0 : Math.max(0, now - Number(due));
}

/**
 * Every owner's funds at once, from the ledger: what open reservations still hold (each launch
 * reserved and not yet released, less what it spent) and everything launches have spent.
 */
export async function fundingTotals(db: Db): Promise<{ reservedLamports: number; spentLamports: number }> {
  const { rows } = await sql<{ reserved: unknown; spent: unknown }>`
    select
      (select coalesce(sum(case when held > 0 then held else 0 end), 0) from (
        select sum(case when kind = 'reserve' then lamports when kind = 'spend' then -lamports else 0 end) as held
        from funding_ledger where launch_id is not null and kind in ('reserve', 'spend', 'release')
        group by launch_id having sum(case when kind = 'release' then 1 else 0 end) = 0
      ) open_reservations) as reserved,
      (select coalesce(sum(lamports), 0) from funding_ledger where kind = 'spend') as spent`.execute(db);
  return { reservedLamports: Number(rows[0]?.reserved ?? 0), spentLamports: Number(rows[0]?.spent ?? 0) };
}

/** Dead letters of kind `watch`: transactions a watch could not decode and skipped. */
export async function countWatchDeadLetters(db: Db): Promise<number> {
  const row = await db.selectFrom('dead_letters').select((eb) => eb.fn.countAll<number>().as('n')).where('kind', '=', 'watch').executeTakeFirstOrThrow();
  return Number(row.n);
}

export interface TableSize {
  table: string;
  /** SQLite: exact; PostgreSQL: the statistics' estimate. */
  rows: number;
  /** The table with its indexes (and, on PostgreSQL, its TOAST). */
  bytes: number;
}

/**
 * Every table of the schema at once, from PostgreSQL's statistics (nothing is scanned): rows are
 * `n_live_tup`, kept current by every commit (within seconds), zero for a table emptied since its
 * last ANALYZE; `reltuples` from the last VACUUM or ANALYZE only where the statistics hold nothing
 * (reset, as a crash restart does); bytes
 * `pg_total_relation_size` (heap, indexes, TOAST).
 */
export async function postgresTableSizes(db: Db): Promise<TableSize[]> {
  const { rows } = await sql<{ table: string; rows: number; bytes: number }>`
    select c.relname as "table",
      case when s.n_live_tup is null or (s.n_live_tup = 0 and s.n_dead_tup = 0 and s.n_tup_ins = 0 and s.n_tup_del = 0
          and s.last_analyze is null and s.last_autoanalyze is null and s.last_vacuum is null and s.last_autovacuum is null)
        then greatest(c.reltuples, 0) else s.n_live_tup end::bigint as rows,
      pg_total_relation_size(c.oid) as bytes
    from pg_class c
    join pg_namespace n on n.oid = c.relnamespace
    left join pg_stat_user_tables s on s.relid = c.oid
    where n.nspname = current_schema() and c.relkind in ('r', 'p')
    order by c.relname`.execute(db);
  return rows.map((r) => ({ table: r.table, rows: Number(r.rows), bytes: Number(r.bytes) }));
}

/**
 * The same from SQLite on the calling connection: an exact count and the `dbstat` pages of each
 * table and its indexes. Both read every page: only for a small database (in memory); a file's are
 * read by tableStats.ts's worker with the same queries.
 */
export async function sqliteTableSizes(db: Db): Promise<TableSize[]> {
  const { rows: objects } = await sql<{ name: string; tbl: string; type: string }>`
    select name, tbl_name as tbl, type from sqlite_schema where type in ('table', 'index') and substr(tbl_name, 1, 7) <> 'sqlite_'`.execute(db);
  const sizes = new Map<string, TableSize>();
  for (const o of objects) {
    if (o.type !== 'table') continue;
    const { rows } = await sql<{ n: number }>`select count(*) as n from ${sql.table(o.name)}`.execute(db);
    sizes.set(o.name, { table: o.name, rows: Number(rows[0]?.n ?? 0), bytes: 0 });
  }
  for (const o of objects) {
    const size = sizes.get(o.tbl);
    if (!size) continue;
    const { rows } = await sql<{ b: number }>`select coalesce(sum(pgsize), 0) as b from dbstat where name = ${o.name} and aggregate = 1`.execute(db);
    size.bytes += Number(rows[0]?.b ?? 0);
  }
  return [...sizes.values()];
}
