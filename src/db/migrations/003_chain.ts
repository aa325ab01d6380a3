import type { Kysely } from 'kysely';

// Frozen once landed. Signatures the embedded chain has processed, committed in the same
// transaction as the accounts they touched, so statuses and duplicate detection survive a restart.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('chain_signatures')
    .addColumn('signature', 'text', (c) => c.primaryKey())
    .addColumn('slot', 'bigint', (c) => c.notNull())
    .addColumn('err', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('chain_signatures').ifExists().execute();
}
