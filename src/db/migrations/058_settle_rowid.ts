import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen once landed. PostgreSQL only. settle_and_claim_webhook_deliveries (migration 056's text
// otherwise: same signature and result) gives the attempt rows it inserts their rowid from the
// sequence directly instead of through the column's default, rowid_after_xid (migration 026), a
// PL/pgSQL call per row that makes sure the transaction has its id before it takes a rowid. Here it
// has: an attempt row is inserted only for a delivery that one of the function's updates just
// changed. The rowids are taken in batch order, as before (the sorted batch is a subquery, numbered
// above it). Every other insert of attempts keeps the default.

export async function up(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return;
  const { rows } = await sql<{ seq: string | null }>`select pg_get_serial_sequence('delivery_attempts', 'rowid') as seq`.execute(db);
  const seq = rows[0]?.seq;
  if (!seq) throw new Error('delivery_attempts.rowid has no sequence');
  await sql
    .raw(
      `create or replace function settle_and_claim_webhook_deliveries(
  s_ids text[], s_owners text[], s_tokens integer[], s_codes integer[], s_nows bigint[], s_endpoint_ids text[],
  a_ids text[], a_attempts integer[], a_started bigint[], a_durations integer[], a_outcomes text[],
  a_error_classes text[], a_error_messages text[], a_bodies text[],
  p_owner text, p_now bigint, p_lease_ms bigint, p_limit integer, p_max_attempts integer,
  p_host_cap integer, p_endpoint_cap integer, p_capped_endpoints text[], p_endpoint_caps integer[],
  p_owner_cap integer, p_held_owners text[], p_held_counts integer[],
  p_excluded text[], p_only_host text, p_running text[], p_prefetch integer)
returns table (delivered text[], canceled text[], ${CLAIM_RESULT})
language plpgsql
set plan_cache_mode = force_generic_plan
as $fn$
#variable_conflict use_column
declare
  done text[] := '{}';
  gone text[] := '{}';
begin
  if coalesce(cardinality(s_ids), 0) > 0 then
    with settled as (
      update deliveries d
      set status = 'delivered', lease_owner = null, lease_expires_at = null, last_status_code = s.code, last_error = null,
        completed_at = s.at, updated_at = s.at
      from unnest(s_ids, s_owners, s_tokens, s_codes, s_nows) as s(id, owner, token, code, at)
      where d.id = s.id and d.lease_owner = s.owner and d.lease_token = s.token and d.status in ('pending', 'paused')
      returning d.id, s.owner, s.token
    ), freed as (
      delete from delivery_leases l using settled x
      where l.delivery_id = x.id and l.lease_owner = x.owner and l.lease_token = x.token
    )
    select coalesce(array_agg(x.id), '{}') into done from settled x;
    if cardinality(done) < cardinality(s_ids) then
      with let_go as (
        update deliveries d
        set lease_owner = null, lease_expires_at = null, last_status_code = s.code, updated_at = s.at
        from unnest(s_ids, s_owners, s_tokens, s_codes, s_nows) as s(id, owner, token, code, at)
        where d.id = s.id and d.lease_owner = s.owner and d.lease_token = s.token and d.status = 'canceled' and s.id <> all(done)
        returning d.id, s.owner, s.token
      ), freed as (
        delete from delivery_leases l using let_go x
        where l.delivery_id = x.id and l.lease_owner = x.owner and l.lease_token = x.token
      )
      select coalesce(array_agg(x.id), '{}') into gone from let_go x;
    end if;
    update webhook_endpoints w set failing_since = null
    where w.failing_since is not null
      and w.id = any(array(select x.e from unnest(s_endpoint_ids, s_ids) as x(e, i) where x.e is not null and x.i = any(done)));
    -- The updates above gave this transaction its id, so each rowid comes straight from the
    -- sequence (rowid_after_xid's check, migration 026, per row, is not needed), in batch order.
    insert into delivery_attempts (id, delivery_id, attempt, started_at, duration_ms, status_code, outcome, error_class, error_message, response_body, rowid)
    select b.id, b.delivery_id, b.attempt, b.started_at, b.duration_ms, b.status_code, b.outcome, b.error_class, b.error_message, b.response_body,
      nextval(${quoted(seq)}::regclass)
    from (select a.id, a.delivery_id, a.attempt, a.started_at, a.duration_ms, a.status_code, a.outcome, a.error_class, a.error_message, a.response_body
      from unnest(a_ids, s_ids, a_attempts, a_started, a_durations, s_codes, a_outcomes, a_error_classes, a_error_messages, a_bodies)
        with ordinality as a(id, delivery_id, attempt, started_at, duration_ms, status_code, outcome, error_class, error_message, response_body, n)
      where a.delivery_id = any(done) or a.delivery_id = any(gone)
      order by a.n) b;
  end if;
  return query
  select done, gone, c.*
  from (select 1) as one
  left join lateral claim_webhook_deliveries(p_owner, p_now, p_lease_ms, p_limit, p_max_attempts, p_host_cap, p_endpoint_cap,
    p_capped_endpoints, p_endpoint_caps, p_owner_cap, p_held_owners, p_held_counts, p_excluded, p_only_host, p_running, p_prefetch) as c on true;
end
$fn$`,
    )
    .execute(db);
}

export async function down(): Promise<void> {
  // Nothing: migration 056's function inserts the same rows (their rowids through the default).
}

/** The claim's result (migration 056). */
const CLAIM_RESULT = `id text, event_id text, launch_id text, url text, host text, endpoint text, endpoint_id text,
  attempt_count integer, lease_token integer,
  ctx_owner text, event text, sequence integer, body text, request_id text,
  webhook_secret_enc text, secret_enc text, signature_scheme text, previous_secret_enc text, previous_secret_expires_at bigint,
  rate_limit_per_second integer, host_allowance integer, endpoint_allowance integer`;

/** A sequence name as a SQL string literal. */
function quoted(name: string): string {
  return `'${name.replaceAll("'", "''")}'`;
}

/** A migration imports no app code; kysely's adapter says which server this is. */
function onPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
