import type { Kysely } from 'kysely';

// Frozen once landed. Owner-level webhook endpoints (docs/webhooks.md) and the endpoint a delivery goes to
// (null: the launch's own webhookUrl). Secrets are sealed with SECRET_KEY like launch secrets; during
// a rotation the previous one is kept until `previous_secret_expires_at`.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('signature_scheme', 'text', (c) => c.notNull())
    .addColumn('secret_enc', 'text', (c) => c.notNull())
    .addColumn('previous_secret_enc', 'text')
    .addColumn('previous_secret_expires_at', 'bigint')
    .addColumn('disabled_at', 'bigint')
    .addColumn('disabled_reason', 'text')
    .addColumn('failing_since', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_endpoints_owner').on('webhook_endpoints').columns(['owner', 'created_at']).execute();
  await db.schema.alterTable('deliveries').addColumn('endpoint_id', 'text').execute();
  await db.schema.createIndex('deliveries_endpoint').on('deliveries').columns(['endpoint_id', 'status', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('deliveries_endpoint').ifExists().execute();
  await db.schema.alterTable('deliveries').dropColumn('endpoint_id').execute();
  await db.schema.dropIndex('webhook_endpoints_owner').ifExists().execute();
  await db.schema.dropTable('webhook_endpoints').ifExists().execute();
}
