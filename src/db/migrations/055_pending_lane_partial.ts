import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen once landed. PostgreSQL only (SQLite keeps migration 022's index). The lanes' index,
// deliveries_pending_lane, becomes (endpoint, owner, next_attempt_at) WHERE status = 'pending':
// every reader of it asks for pending rows (the claim's lane walk and lane reads, the half-open
// trial, pending deliveries per endpoint, the pending count), so a settled row no longer needs an
// entry there, and a settle (a new row version: it changes `status`) writes one index entry less.
// Built under a new name first, so the claim always has an index.

export async function up(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return;
  await sql`create index deliveries_pending_lane_new on deliveries (endpoint, owner, next_attempt_at) where status = 'pending'`.execute(db);
  await sql`drop index deliveries_pending_lane`.execute(db);
  await sql`alter index deliveries_pending_lane_new rename to deliveries_pending_lane`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return;
  await sql`drop index deliveries_pending_lane`.execute(db);
  await sql`create index deliveries_pending_lane on deliveries (status, endpoint, owner, next_attempt_at)`.execute(db);
}

/** A migration imports no app code; kysely's adapter says which server this is. */
function onPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
