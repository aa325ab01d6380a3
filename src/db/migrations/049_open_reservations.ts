import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen once landed. What an owner's open reservations hold, without reading its whole ledger
// (docs/funding.md): every create read the sum over every launch the owner ever made, so its cost
// grew with the owner's history (~11 % of the service's time in the pipeline bench).
// - funding_open_reservations: one row per launch whose reservation is open (a `reserve` entry and
//   no `release`): what it reserved, what its spends add up to and when the last one was recorded.
//   It is an index of the ledger, not a balance of its own: the ledger's entries stay the truth,
//   and triggers on the ledger's insert keep the rows in the inserting transaction (a `reserve`
//   makes the row, a `spend` adds to it, a `release` deletes it), on both databases, whoever
//   writes the entry. A spend's update is an increment, so concurrent spends of one launch add up
//   on PostgreSQL (the row's lock orders them).
// - filled from the ledger as it stands.

const onPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter;

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('funding_open_reservations')
    .addColumn('launch_id', 'text', (c) => c.notNull())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('reserved_lamports', 'bigint', (c) => c.notNull())
    .addColumn('spent_lamports', 'bigint', (c) => c.notNull())
    .addColumn('last_spend_at', 'bigint')
    .addPrimaryKeyConstraint('funding_open_reservations_pk', ['launch_id', 'owner'])
    .execute();
  await db.schema.createIndex('funding_open_reservations_owner').on('funding_open_reservations').columns(['owner']).execute();
  await sql`
    insert into funding_open_reservations (launch_id, owner, reserved_lamports, spent_lamports, last_spend_at)
    select launch_id, owner,
           sum(case when kind = 'reserve' then lamports else 0 end),
           sum(case when kind = 'spend' then lamports else 0 end),
           max(case when kind = 'spend' then created_at end)
    from funding_ledger
    where launch_id is not null and kind in ('reserve', 'spend', 'release')
    group by launch_id, owner
    having sum(case when kind = 'release' then 1 else 0 end) = 0 and sum(case when kind = 'reserve' then 1 else 0 end) > 0`.execute(db);
  // The spends a launch recorded before its reserve (none in practice: a launch reserves in its
  // create's transaction) count as they did when the sum was read from the whole ledger.
  const reserveRow = (n: string) => `
      insert into funding_open_reservations (launch_id, owner, reserved_lamports, spent_lamports, last_spend_at)
      select ${n}.launch_id, ${n}.owner, ${n}.lamports, coalesce(sum(s.lamports), 0), max(s.created_at)
      from funding_ledger s
      where s.launch_id = ${n}.launch_id and s.owner = ${n}.owner and s.kind = 'spend'
        and not exists (select 1 from funding_ledger r where r.launch_id = ${n}.launch_id and r.owner = ${n}.owner and r.kind = 'release')
      group by ${n}.launch_id, ${n}.owner
      union all
      select ${n}.launch_id, ${n}.owner, ${n}.lamports, 0, null
      where not exists (select 1 from funding_ledger s where s.launch_id = ${n}.launch_id and s.owner = ${n}.owner and s.kind in ('spend', 'release'))
      on conflict (launch_id, owner) do update set reserved_lamports = funding_open_reservations.reserved_lamports + excluded.reserved_lamports`;
  if (onPostgres(db)) {
    await sql
      .raw(
        `create function funding_open_reservations_keep() returns trigger language plpgsql as $fn$
begin
  if new.kind = 'reserve' then
    ${reserveRow('new')};
  elsif new.kind = 'spend' then
    update funding_open_reservations
    set spent_lamports = spent_lamports + new.lamports, last_spend_at = greatest(coalesce(last_spend_at, new.created_at), new.created_at)
    where launch_id = new.launch_id and owner = new.owner;
  else
    delete from funding_open_reservations where launch_id = new.launch_id and owner = new.owner;
  end if;
  return null;
end
$fn$`,
      )
      .execute(db);
    await sql`
      create trigger funding_open_reservations_keep after insert on funding_ledger
      for each row when (new.launch_id is not null and new.kind in ('reserve', 'spend', 'release'))
      execute function funding_open_reservations_keep()`.execute(db);
    return;
  }
  await sql
    .raw(
      `create trigger funding_open_reservations_reserve after insert on funding_ledger
when new.launch_id is not null and new.kind = 'reserve'
begin
  ${reserveRow('new')};
end`,
    )
    .execute(db);
  await sql`
    create trigger funding_open_reservations_spend after insert on funding_ledger
    when new.launch_id is not null and new.kind = 'spend'
    begin
      update funding_open_reservations
      set spent_lamports = spent_lamports + new.lamports, last_spend_at = max(coalesce(last_spend_at, new.created_at), new.created_at)
      where launch_id = new.launch_id and owner = new.owner;
    end`.execute(db);
  await sql`
    create trigger funding_open_reservations_release after insert on funding_ledger
    when new.launch_id is not null and new.kind = 'release'
    begin
      delete from funding_open_reservations where launch_id = new.launch_id and owner = new.owner;
    end`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (onPostgres(db)) {
    await sql`drop trigger if exists funding_open_reservations_keep on funding_ledger`.execute(db);
    await sql`drop function if exists funding_open_reservations_keep()`.execute(db);
  } else {
    for (const name of ['reserve', 'spend', 'release']) await sql.raw(`drop trigger if exists funding_open_reservations_${name}`).execute(db);
  }
  await db.schema.dropTable('funding_open_reservations').execute();
}
