import type { Kysely } from 'kysely';

// Frozen once landed. Every owner pays for its own launches (docs/funding.md):
// - funding_wallets: one keypair per owner, its seed sealed under SECRET_KEY, with the owner's limits;
// - funding_ledger: immutable entries (reserve, spend, release, withdraw, deposit); what is reserved
//   is derived from them, never kept as a balance column;
// - launches.payer: the wallet that pays the launch (null: the service's payer, for launches created
//   before funding existed).

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('funding_wallets')
    .addColumn('owner', 'text', (c) => c.primaryKey())
    .addColumn('address', 'text', (c) => c.notNull().unique())
    .addColumn('seed_enc', 'text', (c) => c.notNull())
    .addColumn('max_lamports_per_launch', 'bigint')
    .addColumn('max_lamports_per_day', 'bigint')
    .addColumn('max_launches_per_day', 'integer')
    .addColumn('low_balance_lamports', 'bigint')
    /** 1 while the balance is known to be below the low-balance threshold (one event per crossing). */
    .addColumn('low_balance', 'integer', (c) => c.notNull().defaultTo(0))
    /** The last balance the deposit watch saw, to tell deposits from spends. */
    .addColumn('seen_balance', 'bigint')
    /** A withdrawal being sent: its lamports are held until it is recorded or `withdrawing_until` passes. */
    .addColumn('withdrawing_lamports', 'bigint')
    .addColumn('withdrawing_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('funding_ledger')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('launch_id', 'text')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('lamports', 'bigint', (c) => c.notNull())
    .addColumn('signature', 'text')
    /** Withdrawals: the client's Idempotency-Key and a hash of its request. */
    .addColumn('idempotency_key', 'text')
    .addColumn('request_hash', 'text')
    .addColumn('details', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('funding_ledger_owner').on('funding_ledger').columns(['owner', 'created_at']).execute();
  await db.schema.createIndex('funding_ledger_launch').on('funding_ledger').columns(['launch_id', 'kind']).execute();
  await db.schema.createIndex('funding_ledger_idempotency').on('funding_ledger').columns(['owner', 'idempotency_key']).unique().execute();
  await db.schema.alterTable('launches').addColumn('payer', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('launches').dropColumn('payer').execute();
  await db.schema.dropTable('funding_ledger').execute();
  await db.schema.dropTable('funding_wallets').execute();
}
