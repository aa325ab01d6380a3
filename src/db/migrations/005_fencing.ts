import type { Kysely } from 'kysely';

// Frozen once landed. Fencing tokens: every claim of a launch or a delivery bumps its row's
// `lease_token`, and every write made under that lease names the token it was claimed with, so a
// runner whose lease was taken over (a stall, a clock jump) can no longer write anything.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('launches').addColumn('lease_token', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('deliveries').addColumn('lease_token', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deliveries').dropColumn('lease_token').execute();
  await db.schema.alterTable('launches').dropColumn('lease_token').execute();
}
