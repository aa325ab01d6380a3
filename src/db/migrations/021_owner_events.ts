import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen once landed. Events of an owner that belong to no launch (the funding events, docs/events.md):
// - event_streams: the next sequence number of each such stream (`own_<owner>`), as launches.next_sequence
//   is for a launch's events;
// - watches.launch_id no longer references launches: a funding wallet's watch is keyed by its owner's
//   stream, not by a launch (SQLite rebuilds the table from its own stored definition, so any column
//   an earlier migration added is kept; PostgreSQL drops the constraint);
// - one watch per funding wallet that exists already (new wallets get theirs with the wallet).

/** Far in the future: a funding wallet's watch does not end. */
const NEVER = 253_402_300_799_000;

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('event_streams')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('next_sequence', 'integer', (c) => c.notNull())
    .execute();

  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`alter table watches drop constraint if exists watches_launch_id_fkey`.execute(db);
  } else {
    const table = await sql<{ sql: string }>`select sql from sqlite_master where type = 'table' and name = 'watches'`.execute(db);
    const definition = table.rows[0]?.sql;
    if (definition === undefined) throw new Error('021_owner_events: table watches not found');
    const withoutReference = definition.replace(/\s+references\s+"?launches"?\s*\(\s*"?id"?\s*\)/i, '');
    if (withoutReference !== definition) {
      const indexes = await sql<{ sql: string }>`select sql from sqlite_master where type = 'index' and tbl_name = 'watches' and sql is not null`.execute(db);
      const rebuilt = withoutReference.replace(/^create table\s+"?watches"?/i, 'create table "watches_rebuilt"');
      await sql.raw(rebuilt).execute(db);
      await sql`insert into watches_rebuilt select * from watches`.execute(db);
      await sql`drop table watches`.execute(db);
      await sql`alter table watches_rebuilt rename to watches`.execute(db);
      for (const index of indexes.rows) await sql.raw(index.sql).execute(db);
    }
  }

  await sql`
    insert into watches (id, launch_id, kind, address, context, state, cursor, next_check_at, interval_ms, cliff_at,
      last_checked_at, last_activity_at, ends_at, ended_reason, lease_owner, lease_expires_at, fence, created_at, updated_at)
    select 'wch_fund_' || address, 'own_' || owner, 'funding', address, '{}', 'active', null, created_at, 2000, null,
      null, null, ${NEVER}, null, null, null, 0, created_at, created_at
    from funding_wallets
    where not exists (select 1 from watches w where w.id = 'wch_fund_' || funding_wallets.address)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`delete from watches where kind = 'funding'`.execute(db);
  await db.schema.dropTable('event_streams').execute();
}
