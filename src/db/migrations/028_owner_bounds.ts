import type { Kysely } from 'kysely';

// Frozen once landed. An admin's per-owner overrides of the owner bounds (docs/architecture.md,
// "Limits and fairness"): one row per owner with at least one override; a null column is the
// service's default (its environment variable) for that owner.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('owner_bounds')
    .addColumn('owner', 'text', (c) => c.primaryKey())
    .addColumn('max_endpoints', 'integer')
    .addColumn('max_launches_in_flight', 'integer')
    .addColumn('max_redeliveries', 'integer')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('owner_bounds').execute();
}
