import type { Kysely } from 'kysely';

// Frozen once landed. Dashboard sign-ins (only a hash of the session token is stored) and the
// indexes its pages page and chart by: newest launches (all, by status, by owner and status),
// newest deliveries (all, by status), attempts and launches of the last hour, dead letters newest first.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('dashboard_sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('dashboard_sessions_expiry').on('dashboard_sessions').column('expires_at').execute();
  await db.schema.createIndex('launches_created').on('launches').column('created_at').execute();
  await db.schema.createIndex('launches_status_created').on('launches').columns(['status', 'created_at']).execute();
  await db.schema.createIndex('launches_owner_status_created').on('launches').columns(['owner', 'status', 'created_at']).execute();
  await db.schema.createIndex('deliveries_created').on('deliveries').column('created_at').execute();
  await db.schema.createIndex('deliveries_status_created').on('deliveries').columns(['status', 'created_at']).execute();
  await db.schema.createIndex('delivery_attempts_started').on('delivery_attempts').columns(['started_at', 'outcome', 'duration_ms']).execute();
  await db.schema.createIndex('dead_letters_created').on('dead_letters').column('created_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const index of ['dead_letters_created', 'delivery_attempts_started', 'deliveries_status_created', 'deliveries_created', 'launches_owner_status_created', 'launches_status_created', 'launches_created']) {
    await db.schema.dropIndex(index).ifExists().execute();
  }
  await db.schema.dropTable('dashboard_sessions').ifExists().execute();
}
