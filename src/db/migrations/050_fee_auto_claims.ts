import { sql, type Kysely } from 'kysely';

// Frozen once landed. Auto-claims of creator fees (docs/funding.md, "Auto-claim"): one row per
// complete bonding-curve launch whose request set `fees.autoClaimMinLamports`, made in the
// transaction that completes it. `next_check_at` is when an instance next reads its claimable SOL;
// an instance takes a check by moving it forward (a conditional update), so one instance checks a
// launch at a time. The claims themselves are `fee_claims` rows (origin `auto`), whose running slot
// keeps a launch to one claim at a time across instances. Launches completed before this migration
// get their row here.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('fee_auto_claims')
    .addColumn('launch_id', 'text', (c) => c.primaryKey())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('min_lamports', 'text', (c) => c.notNull())
    .addColumn('next_check_at', 'bigint', (c) => c.notNull())
    .addColumn('checked_by', 'text')
    .addColumn('last_claim_id', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('fee_auto_claims_due').on('fee_auto_claims').column('next_check_at').execute();

  const launches = await sql<{ id: string; owner: string; request: string; results: string | null }>`
    select id, owner, request, results from launches where status = 'complete' and request like ${'%autoClaimMinLamports%'}`.execute(db);
  const now = Date.now();
  for (const launch of launches.rows) {
    let min: unknown;
    let kind: unknown;
    try {
      min = (JSON.parse(launch.request) as { fees?: { autoClaimMinLamports?: unknown } }).fees?.autoClaimMinLamports;
      kind = (JSON.parse(launch.results ?? '{}') as { pool?: { kind?: unknown } }).pool?.kind;
    } catch {
      continue;
    }
    if (typeof min !== 'string' || kind !== 'bonding-curve') continue;
    await db.insertInto('fee_auto_claims').values({ launch_id: launch.id, owner: launch.owner, min_lamports: min, next_check_at: now, checked_by: null, last_claim_id: null, last_error: null, created_at: now, updated_at: now }).execute();
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('fee_auto_claims').ifExists().execute();
}
