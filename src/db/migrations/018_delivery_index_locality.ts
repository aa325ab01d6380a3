import { sql, type Kysely } from 'kysely';

// Frozen once landed. Settling a delivery moves its entries in every index that leads with (or
// holds) its status, from the pending part of the index to the delivered part. When other
// customers' pending rows sit between the two places — any backlog of another host, older than this
// one — each settle writes several more index pages than it would alone (measured: 9 700 WAL pages
// against 6 400 for the same 3 000 deliveries beside a dead host's 2 000). Two of those indexes never
// serve a lookup of delivered rows' status:
// - `deliveries_status_created` lists the dashboard's deliveries by status newest first; delivered
//   rows are listed through `deliveries_created` (most rows are delivered, so a scan by time finds a
//   page of them at once), and the index keeps every other status;
// - `deliveries_endpoint` is only read with `endpoint_id = ?`, so rows without an endpoint (a
//   launch's own webhook URL) need no entry in it.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('deliveries_status_created').execute();
  await sql`create index deliveries_status_created on deliveries (status, created_at) where status <> 'delivered'`.execute(db);
  await db.schema.dropIndex('deliveries_endpoint').execute();
  await sql`create index deliveries_endpoint on deliveries (endpoint_id, status, created_at) where endpoint_id is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('deliveries_endpoint').execute();
  await db.schema.createIndex('deliveries_endpoint').on('deliveries').columns(['endpoint_id', 'status', 'created_at']).execute();
  await db.schema.dropIndex('deliveries_status_created').execute();
  await db.schema.createIndex('deliveries_status_created').on('deliveries').columns(['status', 'created_at']).execute();
}
