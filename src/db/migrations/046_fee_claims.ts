import { sql, type Kysely } from 'kysely';

// Frozen once landed. Creator-fee claims (docs/funding.md, "Creator fees"): one row per claim of a
// launch's fees, made before anything is sent with what it will claim (`plan`), then each signed
// transaction recorded (`pending`) before it is sent, and marked `done` with the signatures and
// amounts in the same commit as `fees.claimed` and the ledger's spend entry. One claim of a launch
// runs at a time (the partial unique index); an Idempotency-Key names one claim per owner.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('fee_claims')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('launch_id', 'text', (c) => c.notNull())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('idempotency_key', 'text')
    .addColumn('origin', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('recipient', 'text', (c) => c.notNull())
    .addColumn('plan', 'text', (c) => c.notNull())
    .addColumn('pending', 'text')
    .addColumn('signatures', 'text')
    .addColumn('amounts', 'text')
    .addColumn('last_error', 'text')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'bigint')
    .addColumn('fence', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .execute();
  await db.schema.createIndex('fee_claims_key').unique().on('fee_claims').columns(['owner', 'idempotency_key']).where(sql.ref('idempotency_key'), 'is not', null).execute();
  await db.schema.createIndex('fee_claims_running').unique().on('fee_claims').column('launch_id').where(sql.ref('state'), '=', 'running').execute();
  await db.schema.createIndex('fee_claims_launch').on('fee_claims').columns(['launch_id', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('fee_claims').ifExists().execute();
}
