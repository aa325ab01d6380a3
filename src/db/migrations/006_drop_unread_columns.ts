import type { Kysely } from 'kysely';

// Frozen once landed. Two launch columns nothing ever read: `key_material_enc` (launch keys are
// derived from SECRET_KEY and the launch id, never stored) and `addresses` (every address is in
// `results`). Dropping them keeps the schema a true picture of what the service keeps.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('launches').dropColumn('key_material_enc').execute();
  await db.schema.alterTable('launches').dropColumn('addresses').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('launches').addColumn('key_material_enc', 'text').execute();
  await db.schema.alterTable('launches').addColumn('addresses', 'text', (c) => c.notNull().defaultTo('{}')).execute();
}
