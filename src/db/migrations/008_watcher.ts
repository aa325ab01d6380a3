import { sql, type Kysely } from 'kysely';

// Frozen once landed. Two parts:
// - The embedded chain's transaction history: each processed transaction's bytes and status meta
//   (for getTransaction), and an index of signatures by account in processing order (for
//   getSignaturesForAddress), written in the same transaction as the accounts it touched.
// - Watches: what the chain watcher follows after a launch completes (cursor, next check, state,
//   last activity, lease with a fencing token), and the (launch, signature, instruction, event)
//   keys it has already reported, so nothing is reported twice.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('chain_signatures').addColumn('seq', 'bigint').execute();
  await db.schema.alterTable('chain_signatures').addColumn('block_time', 'bigint').execute();
  await db.schema.alterTable('chain_signatures').addColumn('tx', 'text').execute();
  await db.schema.alterTable('chain_signatures').addColumn('meta', 'text').execute();
  await db.schema
    .createTable('chain_address_signatures')
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('signature', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('chain_address_signatures_pk', ['address', 'seq'])
    .execute();

  await db.schema
    .createTable('watches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('launch_id', 'text', (c) => c.notNull().references('launches.id'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('context', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('cursor', 'text')
    .addColumn('next_check_at', 'bigint', (c) => c.notNull())
    .addColumn('interval_ms', 'bigint', (c) => c.notNull())
    .addColumn('cliff_at', 'bigint')
    .addColumn('last_checked_at', 'bigint')
    .addColumn('last_activity_at', 'bigint')
    .addColumn('ends_at', 'bigint', (c) => c.notNull())
    .addColumn('ended_reason', 'text')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'bigint')
    .addColumn('fence', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('watches_due').on('watches').columns(['state', 'next_check_at']).execute();
  await db.schema.createIndex('watches_launch').on('watches').columns(['launch_id']).execute();
  await db.schema.createIndex('watches_address').on('watches').columns(['address']).where(sql.ref('state'), '=', 'active').execute();

  await db.schema
    .createTable('watch_reported')
    .addColumn('launch_id', 'text', (c) => c.notNull())
    .addColumn('signature', 'text', (c) => c.notNull())
    .addColumn('instruction_index', 'integer', (c) => c.notNull())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('watch_reported_pk', ['launch_id', 'signature', 'instruction_index', 'event'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('watch_reported').ifExists().execute();
  await db.schema.dropTable('watches').ifExists().execute();
  await db.schema.dropTable('chain_address_signatures').ifExists().execute();
  for (const column of ['meta', 'tx', 'block_time', 'seq']) {
    await db.schema.alterTable('chain_signatures').dropColumn(column).execute();
  }
}
