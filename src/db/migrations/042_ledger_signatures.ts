import { sql, type Kysely } from 'kysely';

// Frozen once landed. One ledger entry per transaction of an owner (docs/funding.md):
// - identical withdrawals (same `to`, same lamports, one blockhash window) used to build one
//   transaction and record one `withdraw` entry per request although the chain ran it once. Those
//   extra entries describe lamports that never left the wallet: the first entry of each
//   (owner, signature) is kept, the later ones are deleted, so the ledger agrees with the chain.
// - a unique index on (owner, signature) refuses a second entry for one transaction from now on;
// - fee_lamports: the fee a withdrawal's transaction paid besides its lamports (a spend's lamports
//   already include its fees).

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    delete from funding_ledger
    where signature is not null and exists (
      select 1 from funding_ledger earlier
      where earlier.owner = funding_ledger.owner and earlier.signature = funding_ledger.signature and earlier.id < funding_ledger.id
    )`.execute(db);
  await db.schema.createIndex('funding_ledger_signature').on('funding_ledger').columns(['owner', 'signature']).unique().execute();
  await db.schema.alterTable('funding_ledger').addColumn('fee_lamports', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('funding_ledger').dropColumn('fee_lamports').execute();
  await db.schema.dropIndex('funding_ledger_signature').execute();
}
