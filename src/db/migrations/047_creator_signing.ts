import type { Kysely } from 'kysely';

// Frozen once landed. Creator-signed launches (docs/signing.md): a launch's signing state and every
// transaction it offers the creator, with the exact message bytes shown for signing, the
// signatures of the keys the service derives for the launch, and the creator's signature once
// verified.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('launch_signing')
    .addColumn('launch_id', 'text', (c) => c.primaryKey())
    .addColumn('creator', 'text', (c) => c.notNull())
    // 'setup': the nonce accounts' transaction is offered; 'launch': the launch's transactions are; 'signed'.
    .addColumn('phase', 'text', (c) => c.notNull())
    .addColumn('nonce_seed', 'text', (c) => c.notNull())
    .addColumn('nonce_count', 'integer', (c) => c.notNull())
    .addColumn('deadline_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('launch_signing_txs')
    .addColumn('launch_id', 'text', (c) => c.notNull())
    .addColumn('idx', 'integer', (c) => c.notNull())
    .addColumn('step', 'text', (c) => c.notNull())
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('signers', 'text', (c) => c.notNull())
    .addColumn('service_signatures', 'text', (c) => c.notNull())
    .addColumn('signature', 'text')
    .addColumn('nonce_account', 'text')
    .addColumn('nonce', 'text')
    .addColumn('last_valid_block_height', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('signed_at', 'bigint')
    .addPrimaryKeyConstraint('launch_signing_txs_pk', ['launch_id', 'idx'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('launch_signing_txs').execute();
  await db.schema.dropTable('launch_signing').execute();
}
