import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen once landed. PostgreSQL's part of the schema that SQLite has built in: the metrics read
// delivery attempts and outbox events in insertion order by `rowid` (src/metrics/sources.ts), which
// every SQLite table has implicitly; on PostgreSQL the same name is a bigserial column (existing rows
// numbered on the way). On SQLite this migration does nothing.

export async function up(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return;
  for (const table of ['delivery_attempts', 'outbox_events']) {
    await sql`alter table ${sql.table(table)} add column rowid bigserial`.execute(db);
    await sql`create unique index ${sql.id(`${table}_rowid`)} on ${sql.table(table)} (rowid)`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return;
  for (const table of ['delivery_attempts', 'outbox_events']) await sql`alter table ${sql.table(table)} drop column rowid`.execute(db);
}

/** A migration imports no app code; kysely's adapter says which server this is. */
function onPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
