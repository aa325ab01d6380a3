import { sql, type Kysely } from 'kysely';

// Frozen once landed. Indexes that make a delivery claim cost independent of the backlog: pending
// deliveries by host in due order (walked one host at a time), and live leases by host.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('deliveries_pending_host').on('deliveries').columns(['status', 'host', 'next_attempt_at']).execute();
  await db.schema.createIndex('deliveries_leased').on('deliveries').columns(['host', 'lease_expires_at']).where(sql.ref('lease_owner'), 'is not', null).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('deliveries_leased').ifExists().execute();
  await db.schema.dropIndex('deliveries_pending_host').ifExists().execute();
}
