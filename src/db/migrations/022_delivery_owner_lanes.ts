import { sql, type Kysely } from 'kysely';

// Frozen once landed. Delivery slots are shared fairly by owner, and by endpoint within an owner
// (docs/architecture.md, "Limits and fairness"), so a delivery names its owner:
// - `deliveries.owner`: the launch's owner, or for an owner's own events (no launch) the owner named
//   in the key `own_<owner>`; existing rows are backfilled the same way;
// - `deliveries_pending_lane (status, endpoint, owner, next_attempt_at)` replaces
//   `deliveries_pending_host (status, host, next_attempt_at)`: the claim walks the (endpoint, owner)
//   lanes with pending work one at a time and reads each lane's deliveries in due order; a half-open
//   trial reads one endpoint's; `status = ?` lookups are served by its leading column as before;
// - `deliveries_leased (host, endpoint, lease_expires_at) where lease_owner is not null` replaces the
//   same index without `endpoint`: live leases counted per host and per endpoint from it.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deliveries').addColumn('owner', 'text', (c) => c.notNull().defaultTo('')).execute();
  await sql`update deliveries set owner = coalesce(
      (select l.owner from launches l where l.id = deliveries.launch_id),
      case when substr(deliveries.launch_id, 1, 4) = 'own_' then substr(deliveries.launch_id, 5) else '' end)`.execute(db);
  await db.schema.dropIndex('deliveries_pending_host').ifExists().execute();
  await db.schema.createIndex('deliveries_pending_lane').on('deliveries').columns(['status', 'endpoint', 'owner', 'next_attempt_at']).execute();
  await db.schema.dropIndex('deliveries_leased').ifExists().execute();
  await db.schema.createIndex('deliveries_leased').on('deliveries').columns(['host', 'endpoint', 'lease_expires_at']).where(sql.ref('lease_owner'), 'is not', null).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('deliveries_leased').ifExists().execute();
  await db.schema.createIndex('deliveries_leased').on('deliveries').columns(['host', 'lease_expires_at']).where(sql.ref('lease_owner'), 'is not', null).execute();
  await db.schema.dropIndex('deliveries_pending_lane').ifExists().execute();
  await db.schema.createIndex('deliveries_pending_host').on('deliveries').columns(['status', 'host', 'next_attempt_at']).execute();
  await db.schema.alterTable('deliveries').dropColumn('owner').execute();
}
