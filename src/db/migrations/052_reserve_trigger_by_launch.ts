import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen once landed. SQLite only. Migration 049's `reserve` trigger read the launch's earlier
// spends and release through the owner's index, not the launch's: SQLite planned
// `launch_id = ? and owner = ? and kind in ('spend', 'release')` (and the `max(created_at)` of the
// spends) on funding_ledger_owner (owner, created_at), so every reservation walked the owner's
// whole ledger (1.2 ms at 1 700 entries, growing with every launch; docs/benchmarks.md, pipeline).
// The same row is made here from reads on funding_ledger_launch (launch_id, kind): the owner is
// compared, not searched (`+owner` keeps SQLite off its index). What the row holds is unchanged: no
// row when the launch has a release, else its reservation, its spends' sum (0 when none) and the
// last spend's time (null when none). PostgreSQL's trigger function already reads by the launch's
// index (its planner weighs the statistics) and is left as it is.

const onPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter;

export async function up(db: Kysely<any>): Promise<void> {
  if (onPostgres(db)) return;
  await sql`drop trigger funding_open_reservations_reserve`.execute(db);
  await sql`
    create trigger funding_open_reservations_reserve after insert on funding_ledger
    when new.launch_id is not null and new.kind = 'reserve'
    begin
      insert into funding_open_reservations (launch_id, owner, reserved_lamports, spent_lamports, last_spend_at)
      select new.launch_id, new.owner, new.lamports, spends.lamports, spends.last_at
      from (
        select coalesce(sum(s.lamports), 0) as lamports, max(s.created_at) as last_at
        from funding_ledger s
        where s.launch_id = new.launch_id and s.kind = 'spend' and +s.owner = new.owner
      ) spends
      where not exists (select 1 from funding_ledger r where r.launch_id = new.launch_id and r.kind = 'release' and +r.owner = new.owner)
      on conflict (launch_id, owner) do update set reserved_lamports = funding_open_reservations.reserved_lamports + excluded.reserved_lamports;
    end`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (onPostgres(db)) return;
  await sql`drop trigger funding_open_reservations_reserve`.execute(db);
  await sql`
    create trigger funding_open_reservations_reserve after insert on funding_ledger
    when new.launch_id is not null and new.kind = 'reserve'
    begin
      insert into funding_open_reservations (launch_id, owner, reserved_lamports, spent_lamports, last_spend_at)
      select new.launch_id, new.owner, new.lamports, coalesce(sum(s.lamports), 0), max(s.created_at)
      from funding_ledger s
      where s.launch_id = new.launch_id and s.owner = new.owner and s.kind = 'spend'
        and not exists (select 1 from funding_ledger r where r.launch_id = new.launch_id and r.owner = new.owner and r.kind = 'release')
      group by new.launch_id, new.owner
      union all
      select new.launch_id, new.owner, new.lamports, 0, null
      where not exists (select 1 from funding_ledger s where s.launch_id = new.launch_id and s.owner = new.owner and s.kind in ('spend', 'release'))
      on conflict (launch_id, owner) do update set reserved_lamports = funding_open_reservations.reserved_lamports + excluded.reserved_lamports;
    end`.execute(db);
}
