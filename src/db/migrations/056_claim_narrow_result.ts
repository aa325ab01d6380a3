import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen once landed. PostgreSQL only. The claim returns what an attempt needs and no more
// (src/webhooks/dispatch/deliveryContext.ts makes the context, sql/claimWork.ts the claimed
// delivery): 22 columns instead of 35. Gone: the delivery's status, lease owner and deadline,
// due, creation, update and completion times, last error and status code, its owner and the event's
// id again (every one known to the caller or unused by the attempt). The lease's own update
// returns only what the lease table and the result need, not `d.*`. Otherwise the text of
// migration 053 (the claim) and 054 (the set-based settle); the result changes, so both are made anew.

export async function up(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return;
  await sql.raw(`drop function settle_and_claim_webhook_deliveries(${SETTLE_ARGS}, ${CLAIM_ARGS})`).execute(db);
  await sql.raw(`drop function claim_webhook_deliveries(${CLAIM_ARGS})`).execute(db);
  await sql
    .raw(
      `create or replace function claim_webhook_deliveries(
  p_owner text, p_now bigint, p_lease_ms bigint, p_limit integer, p_max_attempts integer,
  p_host_cap integer, p_endpoint_cap integer, p_capped_endpoints text[], p_endpoint_caps integer[],
  p_owner_cap integer, p_held_owners text[], p_held_counts integer[],
  p_excluded text[], p_only_host text, p_running text[], p_prefetch integer)
returns table (${CLAIM_RESULT})
language plpgsql
set plan_cache_mode = force_generic_plan
as $fn$
#variable_conflict use_column
declare
  lease_now bigint := (extract(epoch from now()) * 1000)::bigint;
  r record;
  busy_h text[] := '{}'; busy_hn integer[] := '{}';
  busy_e text[] := '{}'; busy_en integer[] := '{}';
  other_h text[] := '{}'; other_hn integer[] := '{}';
  other_e text[] := '{}'; other_en integer[] := '{}';
  ep_cap integer[] := '{}';
  hosts text[] := '{}'; host_free integer[] := '{}';
  eps text[] := '{}'; ep_free integer[] := '{}';
  own text[] := '{}'; own_load integer[] := '{}'; own_room bigint[] := '{}'; own_first bigint[] := '{}'; own_on boolean[] := '{}';
  lane_e text[] := '{}'; lane_o text[] := '{}'; lane_due bigint[] := '{}'; lane_n integer[] := '{}';
  lane_hi integer[] := '{}'; lane_ei integer[] := '{}'; lane_oi integer[] := '{}';
  lanes integer := 0;
  i integer; j integer; k integer; best integer; pick integer; held integer; cap integer;
  left_ integer := p_limit;
  ids text[];
  t_wait text[];
  t_open text[];
  t_ordered text[];
  stale text[] := '{}';
  all_hosts boolean := false;
  hk integer;
begin
  if p_limit <= 0 then return; end if;
  for r in
    with recursive endpoints(e) as (
      select (select d.endpoint from deliveries d where d.status = 'pending' order by d.endpoint limit 1)
      union all
      select (select d.endpoint from deliveries d where d.status = 'pending' and d.endpoint > endpoints.e order by d.endpoint limit 1)
      from endpoints where endpoints.e is not null
    ),
    walk(e, o) as (
      select endpoints.e, (select d.owner from deliveries d where d.status = 'pending' and d.endpoint = endpoints.e order by d.owner limit 1)
      from endpoints where endpoints.e is not null
      union all
      select walk.e, (select d.owner from deliveries d where d.status = 'pending' and d.endpoint = walk.e and d.owner > walk.o order by d.owner limit 1)
      from walk where walk.o is not null
    )
    select walk.e, walk.o, f.next_attempt_at as due_at, f.host as h
    from walk
    cross join lateral (select n.next_attempt_at, n.host from deliveries n
      where n.status = 'pending' and n.endpoint = walk.e and n.owner = walk.o order by n.next_attempt_at limit 1) f
    where walk.o is not null
  loop
    continue when r.due_at > p_now or r.e = any(p_excluded) or (p_only_host is not null and r.h <> p_only_host);
    lanes := lanes + 1;
    lane_e := lane_e || r.e; lane_o := lane_o || r.o; lane_due := lane_due || r.due_at; lane_n := lane_n || 0;
    k := array_position(own, r.o);
    if k is null then
      held := coalesce(p_held_counts[array_position(p_held_owners, r.o)], 0);
      own := own || r.o; own_load := own_load || held; own_first := own_first || r.due_at;
      own_room := own_room || (coalesce(p_owner_cap::bigint, 2147483647) - held);
      own_on := own_on || (coalesce(p_owner_cap::bigint, 2147483647) - held > 0);
      k := array_length(own, 1);
    else
      own_first[k] := least(own_first[k], r.due_at);
    end if;
    lane_oi := lane_oi || k;
    i := array_position(hosts, r.h);
    if i is null then
      hosts := hosts || r.h;
      host_free := host_free || 0;
      i := array_length(hosts, 1);
    end if;
    lane_hi := lane_hi || i;
    i := array_position(eps, r.e);
    if i is null then
      cap := least(p_endpoint_cap, coalesce(p_endpoint_caps[array_position(p_capped_endpoints, r.e)], p_endpoint_cap));
      eps := eps || r.e;
      ep_cap := ep_cap || cap;
      ep_free := ep_free || cap;
      i := array_length(eps, 1);
    end if;
    lane_ei := lane_ei || i;
  end loop;
  if lanes = 0 then return; end if;

  -- Claims contend per host, not on one lock: each takes the claim lock shared, then the lock of
  -- every host its lanes reach, in key order (no two claims wait on each other in a cycle), held to
  -- commit, so what it counts below of a host's live leases holds until its own leases commit. A
  -- claim reaching more than ${MAX_HOST_LOCKS} hosts takes the claim lock alone, exclusively (as a half-open
  -- trial does), rather than fill the server's lock table.
  if cardinality(hosts) > ${MAX_HOST_LOCKS} then
    perform pg_advisory_xact_lock(${CLAIM_LOCK_KEY});
    all_hosts := true;
  else
    perform pg_advisory_xact_lock_shared(${CLAIM_LOCK_KEY});
    for hk in select distinct hashtext(x) from unnest(hosts) x order by 1 loop
      perform pg_advisory_xact_lock(${CLAIM_LOCK_KEY}, hk);
    end loop;
  end if;
  -- Throttled endpoints (rate_limit_per_second): those whose next send slot has not come yet wait;
  -- each of the others may send one delivery in this claim.
  select coalesce(array_agg(w.id) filter (where w.rate_next_at > lease_now), '{}'),
    coalesce(array_agg(w.id) filter (where w.rate_next_at is null or w.rate_next_at <= lease_now), '{}')
  into t_wait, t_open
  from webhook_endpoints w where w.rate_limit_per_second is not null;
  -- Ordered endpoints (ordering 'launch'): a delivery waits while an earlier event of its launch to
  -- the same endpoint is still pending (due, retrying or in flight) or paused.
  select coalesce(array_agg(w.id), '{}') into t_ordered from webhook_endpoints w where w.ordering is not null;
  -- The lease table (one row per lease taken, written only under the lock of its host): each row
  -- is looked up by its delivery's primary key (LIMIT 1 keeps it a lookup, whatever the
  -- statistics); one whose delivery no longer holds that lease (settled, given back, taken over,
  -- gone) is dropped if its host is this claim's, and the live ones are counted per host and endpoint.
  for r in select l.delivery_id as k, l.host as h, l.endpoint as e, 1 as n, x.live, l.lease_owner <> p_owner as other
      from delivery_leases l
      left join lateral (select d.lease_expires_at > lease_now as live from deliveries d
        where d.id = l.delivery_id and d.lease_owner = l.lease_owner and d.lease_token = l.lease_token and d.status = 'pending'
        limit 1) x on true loop
    if r.live is null and (all_hosts or r.h = any(hosts)) then stale := stale || r.k; end if;
    continue when r.live is not true;
    i := array_position(busy_h, r.h);
    if i is null then busy_h := busy_h || r.h; busy_hn := busy_hn || r.n; else busy_hn[i] := busy_hn[i] + r.n; end if;
    i := array_position(busy_e, r.e);
    if i is null then busy_e := busy_e || r.e; busy_en := busy_en || r.n; else busy_en[i] := busy_en[i] + r.n; end if;
    continue when not r.other;
    i := array_position(other_h, r.h);
    if i is null then other_h := other_h || r.h; other_hn := other_hn || r.n; else other_hn[i] := other_hn[i] + r.n; end if;
    i := array_position(other_e, r.e);
    if i is null then other_e := other_e || r.e; other_en := other_en || r.n; else other_en[i] := other_en[i] + r.n; end if;
  end loop;

  for i in 1 .. cardinality(hosts) loop
    host_free[i] := p_host_cap - coalesce(busy_hn[array_position(busy_h, hosts[i])], 0)
      + case when coalesce(other_hn[array_position(other_h, hosts[i])], 0) = 0 then greatest(p_prefetch, 0) else 0 end;
  end loop;
  for i in 1 .. cardinality(eps) loop
    ep_free[i] := ep_free[i] - coalesce(busy_en[array_position(busy_e, eps[i])], 0)
      + case when coalesce(other_en[array_position(other_e, eps[i])], 0) = 0 then least(greatest(p_prefetch, 0), ep_cap[i]) else 0 end;
  end loop;
  if cardinality(stale) > 0 then delete from delivery_leases where delivery_id = any(stale); end if;
  -- Each endpoint its lanes reach, with what this owner may have in flight to its host and to it:
  -- the cap less the other owners' live leases, counted now under the host's lock (no column but
  -- host, endpoint and these two is set: the caller reads these rows first).
  return query
  select null::text, null::text, null::text, null::text, x.h, x.e, null::text, null::integer, null::integer,
    null::text, null::text, null::integer, null::text, null::text,
    null::text, null::text, null::text, null::text, null::bigint, null::integer,
    greatest(p_host_cap - coalesce(other_hn[array_position(other_h, x.h)], 0), 0),
    greatest(x.cap - coalesce(other_en[array_position(other_e, x.e)], 0), 0)
  from (select distinct on (e.e) hosts[l.hi] as h, e.e, e.cap
    from unnest(lane_e, lane_hi) as l(e, hi) join unnest(eps, ep_cap) as e(e, cap) on e.e = l.e) x;

  while left_ > 0 loop
    best := null;
    for k in 1 .. coalesce(array_length(own, 1), 0) loop
      if own_on[k] and (best is null or own_load[k] < own_load[best] or (own_load[k] = own_load[best] and own_first[k] < own_first[best])) then best := k; end if;
    end loop;
    exit when best is null;
    pick := null;
    for j in 1 .. lanes loop
      continue when lane_oi[j] <> best or host_free[lane_hi[j]] <= 0 or ep_free[lane_ei[j]] <= 0;
      if pick is null or lane_n[j] < lane_n[pick] or (lane_n[j] = lane_n[pick] and lane_due[j] < lane_due[pick]) then pick := j; end if;
    end loop;
    if pick is null then
      own_on[best] := false;
      continue;
    end if;
    lane_n[pick] := lane_n[pick] + 1;
    host_free[lane_hi[pick]] := host_free[lane_hi[pick]] - 1;
    ep_free[lane_ei[pick]] := ep_free[lane_ei[pick]] - 1;
    own_load[best] := own_load[best] + 1;
    own_room[best] := own_room[best] - 1;
    left_ := left_ - 1;
    if own_room[best] <= 0 then own_on[best] := false; end if;
  end loop;

  select array_agg(c.id) into ids
  from unnest(lane_e, lane_o, lane_n) as l(e, o, n)
  cross join lateral (
    select y.id from deliveries y
    where y.endpoint = l.e and y.owner = l.o and y.status = 'pending' and y.next_attempt_at <= p_now
      and (y.lease_owner is null or y.lease_expires_at <= lease_now) and y.attempt_count < p_max_attempts
      and y.id <> all(p_running)
      and (y.endpoint_id is null or y.endpoint_id <> all(t_wait))
      and (y.endpoint_id is null or y.endpoint_id <> all(t_ordered) or not exists (
        select 1 from deliveries p join outbox_events pe on pe.id = p.event_id
        where p.launch_id = y.launch_id and p.endpoint_id = y.endpoint_id and p.status in ('pending', 'paused')
          and pe.sequence < (select ye.sequence from outbox_events ye where ye.id = y.event_id)))
    order by y.next_attempt_at
    limit l.n
    for update of y skip locked) c
  where l.n > 0;
  if ids is null then return; end if;
  if cardinality(t_open) > 0 then
    -- One delivery per throttled endpoint (its earliest due), and its next slot 1.2 s / rate on.
    select array_agg(x.id) into ids from (
      select y.id, y.endpoint_id,
        row_number() over (partition by coalesce(y.endpoint_id, y.id) order by y.next_attempt_at, y.created_at, y.id) as n
      from deliveries y where y.id = any(ids)) x
    where x.n = 1 or x.endpoint_id is null or x.endpoint_id <> all(t_open);
    update webhook_endpoints w
    set rate_next_at = lease_now + ceil(${RATE_WINDOW_MS}.0 / w.rate_limit_per_second)::bigint
    where w.id = any(t_open) and w.id in (select y.endpoint_id from deliveries y where y.id = any(ids));
  end if;

  return query
  with leased as (
    update deliveries d
    set lease_owner = p_owner, lease_expires_at = lease_now + p_lease_ms, attempt_count = d.attempt_count + 1,
      lease_token = d.lease_token + 1, updated_at = p_now
    where d.id = any(ids)
    returning d.id, d.event_id, d.launch_id, d.url, d.host, d.endpoint, d.endpoint_id, d.attempt_count, d.lease_owner, d.lease_token,
      d.next_attempt_at, d.created_at
  ), noted as (
    insert into delivery_leases (delivery_id, host, endpoint, lease_owner, lease_token)
    select x.id, x.host, x.endpoint, x.lease_owner, x.lease_token from leased x
    on conflict (delivery_id) do update set host = excluded.host, endpoint = excluded.endpoint, lease_owner = excluded.lease_owner, lease_token = excluded.lease_token
  )
  select x.id, x.event_id, x.launch_id, x.url, x.host, x.endpoint, x.endpoint_id, x.attempt_count, x.lease_token,
    coalesce(l.owner, case when substr(x.launch_id, 1, 4) = 'own_' then substr(x.launch_id, 5) end),
    e.event, e.sequence, e.body, e.request_id, l.webhook_secret_enc, w.secret_enc, w.signature_scheme, w.previous_secret_enc, w.previous_secret_expires_at,
    w.rate_limit_per_second, null::integer, null::integer
  from leased x
  left join outbox_events e on e.id = x.event_id
  left join launches l on l.id = x.launch_id
  left join webhook_endpoints w on w.id = x.endpoint_id
  order by x.next_attempt_at, x.created_at, e.sequence;
end
$fn$`,
    )
    .execute(db);
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
    p_capped_endpoints, p_endpoint_caps, p_owner_cap, p_held_owners, p_held_counts, p_excluded, p_only_host, p_running, p_prefetch) as c on true;
end
$fn$`,
    )
    .execute(db);
}

export async function down(): Promise<void> {
  // Nothing: later code reads the narrower result.
}

/** The claim's result: a leased delivery and its context per row, or (id null) one endpoint's send allowances. */
const CLAIM_RESULT = `id text, event_id text, launch_id text, url text, host text, endpoint text, endpoint_id text,
  attempt_count integer, lease_token integer,
  ctx_owner text, event text, sequence integer, body text, request_id text,
  webhook_secret_enc text, secret_enc text, signature_scheme text, previous_secret_enc text, previous_secret_expires_at bigint,
  rate_limit_per_second integer, host_allowance integer, endpoint_allowance integer`;

const CLAIM_ARGS = 'text, bigint, bigint, integer, integer, integer, integer, text[], integer[], integer, text[], integer[], text[], text, text[], integer';
const SETTLE_ARGS = 'text[], text[], integer[], integer[], bigint[], text[], text[], integer[], bigint[], integer[], text[], text[], text[], text[]';

/** A send slot per 1.2 s / rate (src/webhooks/sql/throttle.ts RATE_WINDOW_MS). */
const RATE_WINDOW_MS = 1_200;

/** The delivery claim's advisory lock key (src/webhooks/sql/claimDeliveries.ts); with a host's hash as second key, that host's lock. */
const CLAIM_LOCK_KEY = 0x64_6c_76_63; // 'dlvc'

/** Past this many hosts a claim takes the claim lock exclusively instead of one lock per host. */
const MAX_HOST_LOCKS = 32;

/** A migration imports no app code; kysely's adapter says which server this is. */
function onPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
