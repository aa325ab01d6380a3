import { sql, type Kysely } from 'kysely';

// Frozen once landed. The graduation of a bonding-curve launch (docs/programs.md, "Graduation"): one
// row per launch, made with the launch's completion. The chain watcher marks it `due` when it sees
// the curve full; the graduation job claims due rows with a lease and a fencing token, records the
// signed migration transaction (`pending`) before sending it, and marks the row `done` with the
// DAMM v2 pool in the same commit as `pool.graduated` and the ledger's spend entry.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('curve_migrations')
    .addColumn('launch_id', 'text', (c) => c.primaryKey())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('pool', 'text', (c) => c.notNull())
    .addColumn('threshold_lamports', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('due_at', 'bigint')
    .addColumn('next_attempt_at', 'bigint')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('pending', 'text')
    .addColumn('signature', 'text')
    .addColumn('amm_pool', 'text')
    .addColumn('result', 'text')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'bigint')
    .addColumn('fence', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('graduated_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('curve_migrations_due').on('curve_migrations').columns(['next_attempt_at']).where(sql.ref('state'), '=', 'due').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('curve_migrations').ifExists().execute();
}
