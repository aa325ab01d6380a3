import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen once landed. PostgreSQL only (on SQLite this migration does nothing): the claim functions
// (migrations 023 and 024) plan their statements once per connection instead of on every call.
// PL/pgSQL caches each statement's plan, but under the default `plan_cache_mode` these statements
// (parameters are arrays) were planned afresh for every call: about a quarter of a turn's time on
// the server (docs/benchmarks.md). With `force_generic_plan` a plan is made once and kept, so no
// statement may depend on the table's statistics to find its rows: the settle's updates become one
// update by primary key per delivery (the set-based `id = any(...) and status in (...)` form, planned
// generically on a table not yet analyzed, scanned every pending delivery by status). What the
// settle does is unchanged: see migration 024.

export async function up(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return;
  await sql.raw(`alter function claim_webhook_deliveries(${CLAIM_ARGS}) set plan_cache_mode = force_generic_plan`).execute(db);
  await sql
    .raw(
      `create or replace function settle_and_claim_webhook_deliveries(
  s_ids text[], s_owners text[], s_tokens integer[], s_codes integer[], s_nows bigint[], s_endpoint_ids text[],
  a_ids text[], a_attempts integer[], a_started bigint[], a_durations integer[], a_outcomes text[],
  a_error_classes text[], a_error_messages text[], a_bodies text[],
  p_owner text, p_now bigint, p_lease_ms bigint, p_limit integer, p_max_attempts integer,
  p_host_cap integer, p_endpoint_cap integer, p_capped_endpoints text[], p_endpoint_caps integer[],
  p_owner_cap integer, p_held_owners text[], p_held_counts integer[],
  p_excluded text[], p_only_host text, p_running text[])
returns table (delivered text[], canceled text[],
  id text, event_id text, launch_id text, url text, host text, endpoint text, status text,
  attempt_count integer, next_attempt_at bigint, lease_owner text, lease_expires_at bigint, lease_token integer,
  last_error text, last_status_code integer, created_at bigint, updated_at bigint, completed_at bigint, endpoint_id text, owner text,
  ctx_owner text, ctx_event_id text, event text, sequence integer, body text, request_id text,
  webhook_secret_enc text, secret_enc text, signature_scheme text, previous_secret_enc text, previous_secret_expires_at bigint)
language plpgsql
set plan_cache_mode = force_generic_plan
as $fn$
#variable_conflict use_column
declare
  done text[] := '{}';
  gone text[] := '{}';
  one_id text;
  i integer;
begin
  if coalesce(array_length(s_ids, 1), 0) > 0 then
    for i in 1 .. array_length(s_ids, 1) loop
      update deliveries d
      set status = 'delivered', lease_owner = null, lease_expires_at = null, last_status_code = s_codes[i], last_error = null,
        completed_at = s_nows[i], updated_at = s_nows[i]
      where d.id = s_ids[i] and d.lease_owner = s_owners[i] and d.lease_token = s_tokens[i] and d.status in ('pending', 'paused')
      returning d.id into one_id;
      if found then done := done || one_id; end if;
    end loop;
    if array_length(done, 1) is distinct from array_length(s_ids, 1) then
      for i in 1 .. array_length(s_ids, 1) loop
        continue when s_ids[i] = any(done);
        update deliveries d
        set lease_owner = null, lease_expires_at = null, last_status_code = s_codes[i], updated_at = s_nows[i]
        where d.id = s_ids[i] and d.lease_owner = s_owners[i] and d.lease_token = s_tokens[i] and d.status = 'canceled'
        returning d.id into one_id;
        if found then gone := gone || one_id; end if;
      end loop;
    end if;
    update webhook_endpoints w set failing_since = null
    where w.failing_since is not null
      and w.id = any(array(select x.e from unnest(s_endpoint_ids, s_ids) as x(e, i) where x.e is not null and x.i = any(done)));
    insert into delivery_attempts (id, delivery_id, attempt, started_at, duration_ms, status_code, outcome, error_class, error_message, response_body)
    select a.id, a.delivery_id, a.attempt, a.started_at, a.duration_ms, a.status_code, a.outcome, a.error_class, a.error_message, a.response_body
    from unnest(a_ids, s_ids, a_attempts, a_started, a_durations, s_codes, a_outcomes, a_error_classes, a_error_messages, a_bodies)
      with ordinality as a(id, delivery_id, attempt, started_at, duration_ms, status_code, outcome, error_class, error_message, response_body, n)
    where a.delivery_id = any(done) or a.delivery_id = any(gone)
    order by a.n;
  end if;
  return query
  select done, gone, c.*
  from (select 1) as one
  left join lateral claim_webhook_deliveries(p_owner, p_now, p_lease_ms, p_limit, p_max_attempts, p_host_cap, p_endpoint_cap,
    p_capped_endpoints, p_endpoint_caps, p_owner_cap, p_held_owners, p_held_counts, p_excluded, p_only_host, p_running) as c on true;
end
$fn$`,
    )
    .execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return;
  await sql.raw(`alter function claim_webhook_deliveries(${CLAIM_ARGS}) reset plan_cache_mode`).execute(db);
  await sql.raw(`alter function settle_and_claim_webhook_deliveries(${SETTLE_ARGS}, ${CLAIM_ARGS}) reset plan_cache_mode`).execute(db);
}

const CLAIM_ARGS = 'text, bigint, bigint, integer, integer, integer, integer, text[], integer[], integer, text[], integer[], text[], text, text[]';
const SETTLE_ARGS = 'text[], text[], integer[], integer[], bigint[], text[], text[], integer[], bigint[], integer[], text[], text[], text[], text[]';

/** A migration imports no app code; kysely's adapter says which server this is. */
function onPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
