import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen once landed. PostgreSQL only (on SQLite this migration does nothing): a dispatcher's turn
// whose finished attempts all succeeded, settled and followed by its ordinary claim in one round
// trip and one transaction, as src/webhooks/settle.ts and settleAndClaim.ts do it in several:
// - each success marks its delivery delivered (last status code, completion time) while this exact
//   claim (lease owner and fencing token) still holds it and it is pending or paused;
// - one not marked that this claim still holds but that was canceled meanwhile is let go and stays
//   canceled;
// - a delivered endpoint delivery ends its endpoint's failing run;
// - the attempt rows of the delivered and the canceled go in, in the order given (a lost lease's
//   attempt belongs to the newer claim: no row);
// - then claim_webhook_deliveries (migration 023) claims, seeing the slots these settles freed.
// Every row returned names the delivered and the canceled ids; the rest are the claimed deliveries
// (one row with a null id when nothing was claimed).

export async function up(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return;
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
language plpgsql as $fn$
#variable_conflict use_column
declare
  done text[] := '{}';
  gone text[] := '{}';
begin
  if coalesce(array_length(s_ids, 1), 0) > 0 then
    with marked as (
      update deliveries d
      set status = 'delivered', lease_owner = null, lease_expires_at = null,
        last_status_code = s_codes[array_position(s_ids, d.id)], last_error = null,
        completed_at = s_nows[array_position(s_ids, d.id)], updated_at = s_nows[array_position(s_ids, d.id)]
      where d.id = any(s_ids) and d.lease_owner = s_owners[array_position(s_ids, d.id)]
        and d.lease_token = s_tokens[array_position(s_ids, d.id)] and d.status in ('pending', 'paused')
      returning d.id
    )
    select coalesce(array_agg(marked.id), '{}') into done from marked;
    if coalesce(array_length(done, 1), 0) < array_length(s_ids, 1) then
      with let_go as (
        update deliveries d
        set lease_owner = null, lease_expires_at = null,
          last_status_code = s_codes[array_position(s_ids, d.id)], updated_at = s_nows[array_position(s_ids, d.id)]
        where d.id = any(s_ids) and not (d.id = any(done)) and d.lease_owner = s_owners[array_position(s_ids, d.id)]
          and d.lease_token = s_tokens[array_position(s_ids, d.id)] and d.status = 'canceled'
        returning d.id
      )
      select coalesce(array_agg(let_go.id), '{}') into gone from let_go;
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
  await sql`drop function if exists settle_and_claim_webhook_deliveries(text[], text[], integer[], integer[], bigint[], text[], text[], integer[], bigint[], integer[], text[], text[], text[], text[], text, bigint, bigint, integer, integer, integer, integer, text[], integer[], integer, text[], integer[], text[], text, text[])`.execute(db);
}

/** A migration imports no app code; kysely's adapter says which server this is. */
function onPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
