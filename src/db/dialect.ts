import { PostgresAdapter, sql, type Kysely, type RawBuilder } from 'kysely';

/**
 * The one place where SQLite and PostgreSQL differ for the service's queries (docs/architecture.md, SQLite and PostgreSQL). Everything
 * else is written with kysely's builder or in SQL both accept.
 */

/** True when `db` (a database or a transaction) runs on PostgreSQL. */
export function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/**
 * "Now" for lease deadlines, in unix ms. On SQLite it is the caller's `now` (the injected clock: one
 * process owns the file, so its clock is the only one). On PostgreSQL several processes share the
 * leases, so every lease is set and compared against the database server's clock (`now()`, the
 * transaction's start), never a process's own: a process whose clock is off cannot steal a live
 * lease or keep a dead one. Tests that jump an injected clock past a lease run on SQLite only.
 */
export function leaseNow(db: Kysely<any>, now: number): RawBuilder<number> {
  return isPostgres(db) ? sql<number>`(extract(epoch from now()) * 1000)::bigint` : sql<number>`${now}`;
}

/** The text at `path` inside a JSON text column (`json_extract` on SQLite, `#>>` on PostgreSQL). */
export function jsonText(db: Kysely<any>, column: RawBuilder<unknown>, path: string[]): RawBuilder<string | null> {
  return isPostgres(db) ? sql<string | null>`(${column})::json #>> ${`{${path.join(',')}}`}` : sql<string | null>`json_extract(${column}, ${`$.${path.join('.')}`})`;
}

/** A lease deadline `leaseMs` after {@link leaseNow}. */
export function leaseDeadline(db: Kysely<any>, now: number, leaseMs: number): RawBuilder<number> {
  return isPostgres(db) ? sql<number>`(extract(epoch from now()) * 1000)::bigint + ${leaseMs}` : sql<number>`${now + leaseMs}`;
}

/**
 * A join whose order the SQLite planner must keep (`CROSS JOIN` is SQLite's way to pin the order;
 * PostgreSQL's planner chooses on its own and takes a plain `JOIN`).
 */
export function orderedJoin(db: Kysely<any>): RawBuilder<unknown> {
  return isPostgres(db) ? sql`join` : sql`cross join`;
}

/** A column SQLite must not use an index for (`+column`); PostgreSQL's planner needs no hint. */
export function withoutIndex(db: Kysely<any>, column: string): RawBuilder<unknown> {
  return isPostgres(db) ? sql.ref(column) : sql`+${sql.ref(column)}`;
}

/**
 * Serializes the transactions that check one bound and then write under it (`key`: what is
 * counted, e.g. an owner's endpoints). On PostgreSQL a transaction-scoped advisory lock on the key's
 * hash, held until commit, so two instances cannot both see room for one more; on SQLite nothing:
 * one process owns the file and its transactions already run one at a time.
 */
const BOUND_LOCK_SPACE = 0x6c_6d_74; // 'lmt'

export async function lockBound(db: Kysely<any>, key: string): Promise<void> {
  // The two-key form: its key space never meets the single-key locks (the delivery claim's).
  if (isPostgres(db)) await sql`select pg_advisory_xact_lock(${BOUND_LOCK_SPACE}, hashtext(${key}))`.execute(db);
}
