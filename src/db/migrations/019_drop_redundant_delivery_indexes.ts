import type { Kysely } from 'kysely';

// Frozen once landed. Every insert into `deliveries` writes a page of each of its indexes, and every
// settle moves the row's entries in each index that holds its status; in the `pipeline` bench the
// deliveries' index pages were the largest part of the ~150 WAL pages a launch wrote. Two indexes
// serve no lookup the others do not:
// - `deliveries_due (status, next_attempt_at)`: the claims walk `deliveries_pending_host (status,
//   host, next_attempt_at)` host by host, and every `status = ?` lookup and count (metrics, health,
//   breakers) is served by that index's leading column just as well;
// - `deliveries_host (host, status)`: no query reads it (busy hosts come from `deliveries_leased`,
//   pending hosts from `deliveries_pending_host`).

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('deliveries_due').ifExists().execute();
  await db.schema.dropIndex('deliveries_host').ifExists().execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('deliveries_host').ifNotExists().on('deliveries').columns(['host', 'status']).execute();
  await db.schema.createIndex('deliveries_due').ifNotExists().on('deliveries').columns(['status', 'next_attempt_at']).execute();
}
