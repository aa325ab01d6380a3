import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen once landed. PostgreSQL only (on SQLite this migration does nothing): the metrics read
// delivery attempts and outbox events by `rowid` and must never pass a rowid whose transaction may
// still commit (src/metrics/appendCursor.ts). A transaction now takes its transaction id before its
// rowid, so a rowid missing below a visible one belongs to a transaction whose id is below the
// transaction-id horizon of any snapshot that sees the higher one: once every transaction below that
// horizon has ended, the missing row has either been read or will never exist.

const TABLES = ['delivery_attempts', 'outbox_events'] as const;

export async function up(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return;
  await sql`create or replace function rowid_after_xid(seq regclass) returns bigint language plpgsql volatile as $$
    begin
      perform pg_current_xact_id();
      return nextval(seq);
    end $$`.execute(db);
  for (const table of TABLES) {
    const seq = await sequenceOf(db, table);
    await sql`alter table ${sql.table(table)} alter column rowid set default rowid_after_xid(${sql.lit(seq)}::regclass)`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return;
  for (const table of TABLES) {
    const seq = await sequenceOf(db, table);
    await sql`alter table ${sql.table(table)} alter column rowid set default nextval(${sql.lit(seq)}::regclass)`.execute(db);
  }
  await sql`drop function if exists rowid_after_xid(regclass)`.execute(db);
}

async function sequenceOf(db: Kysely<any>, table: string): Promise<string> {
  const { rows } = await sql<{ seq: string }>`select pg_get_serial_sequence(${table}, 'rowid') as seq`.execute(db);
  const seq = rows[0]?.seq;
  if (!seq) throw new Error(`${table}.rowid has no sequence`);
  return seq;
}

/** A migration imports no app code; kysely's adapter says which server this is. */
function onPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
