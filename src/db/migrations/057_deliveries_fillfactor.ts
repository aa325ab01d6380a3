import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen once landed. PostgreSQL only. `deliveries` gets a fillfactor of 50 (migration 048 set 70).
// A lease changes no indexed column, so it is a HOT update whenever the row's page has room for
// the new version; a claim leases its lanes' earliest due deliveries together, which were inserted
// together, so it updates most rows of a page in one transaction. With 30% of a page free only
// about half of them fitted (pg_stat_statements bench: 0.40-0.56 of the leases HOT), and each lease
// that did not wrote a new entry into every index of the table. With half the page free a page's
// rows can all be leased in place. Only pages filled from now on keep the room: rows already
// written are left as they are (no rewrite, no lock beyond a brief SHARE UPDATE EXCLUSIVE).

export async function up(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return;
  await sql`alter table deliveries set (fillfactor = 50)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return;
  await sql`alter table deliveries set (fillfactor = 70)`.execute(db);
}

/** A migration imports no app code; kysely's adapter says which server this is. */
function onPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
