import { sql } from 'kysely';
import type { DbOrTx } from '../../db/database.js';
import type { DeliveryRow } from '../../db/schema.js';
import { isPostgres } from '../../db/dialect.js';
import { execSql, placeholders } from '../../db/sqlText.js';
import { hostOfEndpoint } from '../endpointKey.js';
import { laneHost, shareSlots, type Lane } from './shareSlots.js';
import { takeSlotOf, takeSlots, throttleOpenCondition, throttledEndpoints } from './throttle.js';
import { ORDERED_CONDITION } from './ordering.js';

export interface ClaimArgs {
  /** The lease owner: the claiming dispatcher's id. */
  owner: string;
  now: number;
  leaseMs: number;
  /** At most this many deliveries (the free global in-flight slots). */
  limit: number;
  /** Per-host in-flight cap, counting live leases of every dispatcher. */
  perHostCap: number;
  /** Per-endpoint in-flight cap, counting live leases of every dispatcher (default: the per-host cap). */
  perEndpointCap?: number;
  /** Lower caps of some endpoints (slow ones, see webhooks/endpointPace.ts), by endpoint. */
  endpointCaps?: ReadonlyMap<string, number>;
  /** At most this many deliveries of one owner (`deliveries.owner`) held by this dispatcher (default: no bound). */
  perOwnerCap?: number;
  /** Deliveries of each owner this dispatcher holds now (their slots are this claim's fair-share baseline). */
  ownerHeld?: ReadonlyMap<string, number>;
  /** Endpoints (breaker keys) whose breaker is not closed. */
  excludeEndpoints: string[];
  /** Claim only for this host (the half-open trial's endpoint's host). */
  onlyHost?: string;
  /** Attempts a delivery gets; one whose attempts are spent is never claimed (see failSpentDeliveriesIn). */
  maxAttempts: number;
  /** Deliveries this dispatcher is attempting now: never claimed again by it, even with an expired lease. */
  running?: readonly string[];
  /** Claim only for this endpoint (the half-open trial), the least recently touched delivery first. */
  onlyEndpoint?: string;
}

/**
 * Leases due deliveries with `UPDATE … RETURNING`: pending, due, not leased (or the lease expired,
 * so a crashed dispatcher's work is reclaimed), within the host's and the endpoint's in-flight caps,
 * and shared fairly by owner and, within an owner, by endpoint (docs/architecture.md, "Limits and
 * fairness"). Claiming counts the attempt, so a crash mid-attempt still consumes it, and bumps the
 * fencing token that the settle must name. A delivery whose attempts are spent is not a candidate:
 * it is failed and dead-lettered by `failSpentDeliveriesIn` instead, so no claim ever hands out
 * attempt N+1.
 *
 * The cost does not grow with the backlog. The lanes with pending work — one per (endpoint, owner) —
 * are found by skipping through the (status, endpoint, owner, next_attempt_at) index one lane at a
 * time, with each lane's earliest pending due time; live leases (every dispatcher's) are counted per
 * host and endpoint from a partial index (migration 022; PostgreSQL: the lease table, migration 048). `shareSlots` then hands the free slots out
 * one at a time: to the owner holding the fewest, within it to the endpoint given the fewest, never
 * past an owner's, endpoint's or host's cap. Each lane given slots has its earliest due deliveries
 * leased in index order (SQLite: a small read per lane, then each leased by id). Run inside a write
 * transaction (SQLite: the dispatcher's own; PostgreSQL: under the claim lock), so the lease counts
 * read first still hold at the update. On PostgreSQL the ordinary claim (not a half-open trial) is
 * all of this in one function call, {@link claimWithFunctionPg}.
 */
export async function claimDueDeliveries(db: DbOrTx, args: ClaimArgs): Promise<DeliveryRow[]> {
  if (args.limit <= 0) return [];
  if (!isPostgres(db)) return claimIn(db, args);
  if (args.onlyEndpoint === undefined) return (await claimWithFunctionPg(db, args)).map(deliveryRowOf);
  // PostgreSQL, several instances: the per-host cap counts every instance's live leases, which two
  // claims running at once would not see of each other. The claim function takes the claim lock
  // shared and its hosts' locks (migration 051: claims contend per host); a half-open trial takes
  // the claim lock exclusively (held to commit, a few ms, and rare), so it sees the leases of every
  // claim before it; SKIP LOCKED still keeps them clear of rows others are settling.
  if (db.isTransaction) {
    await lockClaims(db);
    return claimIn(db, args);
  }
  return db.transaction().execute(async (trx) => {
    await lockClaims(trx);
    return claimIn(trx, args);
  });
}

/** A row the PostgreSQL claim function returns: the leased delivery and what its attempt needs (null where its event or launch is gone). */
export type ClaimedRowPg = DeliveryRow & {
  ctx_owner: string | null;
  ctx_event_id: string | null;
  event: string | null;
  sequence: number | null;
  body: string | null;
  request_id: string | null;
  webhook_secret_enc: string | null;
  secret_enc: string | null;
  signature_scheme: 'service' | 'standard' | null;
  previous_secret_enc: string | null;
  previous_secret_expires_at: number | null;
  rate_limit_per_second: number | null;
};

/**
 * PostgreSQL's ordinary claim in one round trip: `claim_webhook_deliveries` (migration 023) takes the
 * claim lock, counts the live leases, walks the lanes, shares the slots as {@link shareSlots} does,
 * leases the lanes' earliest due deliveries (`FOR UPDATE SKIP LOCKED`) and returns them with their
 * event, owner and sealed secrets, in due, creation and event order. Not for half-open trials.
 */
export async function claimWithFunctionPg(db: DbOrTx, args: ClaimArgs): Promise<ClaimedRowPg[]> {
  if (args.limit <= 0) return [];
  return (await execSql<ClaimedRowPg>(db, CLAIM_FUNCTION_PG, claimFunctionParams(args))).rows;
}

/** The claim function's parameters, in its order (also the last of settle_and_claim_webhook_deliveries', migration 024). */
export function claimFunctionParams(args: ClaimArgs): unknown[] {
  const perEndpointCap = args.perEndpointCap ?? args.perHostCap;
  const cappedEndpoints: string[] = [];
  const endpointCaps: number[] = [];
  for (const [endpoint, cap] of args.endpointCaps ?? []) {
    cappedEndpoints.push(endpoint);
    endpointCaps.push(cap);
  }
  const heldOwners: string[] = [];
  const heldCounts: number[] = [];
  for (const [owner, n] of args.ownerHeld ?? []) {
    heldOwners.push(owner);
    heldCounts.push(n);
  }
  const ownerCap = args.perOwnerCap === undefined || !Number.isFinite(args.perOwnerCap) ? null : args.perOwnerCap;
  return [args.owner, args.now, args.leaseMs, args.limit, args.maxAttempts, args.perHostCap, perEndpointCap, cappedEndpoints, endpointCaps, ownerCap, heldOwners, heldCounts, args.excludeEndpoints, args.onlyHost ?? null, args.running ?? []];
}

/** The claim function's parameters as placeholders. */
export const CLAIM_PARAMS_PG = '?, ?, ?, ?, ?, ?, ?, ?::text[], ?::integer[], ?, ?::text[], ?::integer[], ?::text[], ?, ?::text[]';
const CLAIM_FUNCTION_PG = `select * from claim_webhook_deliveries(${CLAIM_PARAMS_PG})`;

function deliveryRowOf(row: ClaimedRowPg): DeliveryRow {
  return {
    id: row.id,
    event_id: row.event_id,
    launch_id: row.launch_id,
    url: row.url,
    host: row.host,
    endpoint: row.endpoint,
    status: row.status,
    attempt_count: row.attempt_count,
    next_attempt_at: row.next_attempt_at,
    lease_owner: row.lease_owner,
    lease_expires_at: row.lease_expires_at,
    lease_token: row.lease_token,
    last_error: row.last_error,
    last_status_code: row.last_status_code,
    created_at: row.created_at,
    updated_at: row.updated_at,
    completed_at: row.completed_at,
    endpoint_id: row.endpoint_id,
    owner: row.owner,
  };
}

/** Any constant both sides agree on (and the claim function, migrations 023-051): the key of the delivery-claim advisory lock. */
const CLAIM_LOCK_KEY = 0x64_6c_76_63; // 'dlvc'

async function lockClaims(trx: DbOrTx): Promise<void> {
  await sql`select pg_advisory_xact_lock(${CLAIM_LOCK_KEY})`.execute(trx);
}


const LEASE_NOW_PG = '(extract(epoch from now()) * 1000)::bigint';

async function claimIn(db: DbOrTx, args: ClaimArgs): Promise<DeliveryRow[]> {
  const pg = isPostgres(db);
  // Live leases of every dispatcher, per host and endpoint (the partial index of leased rows).
  const { rows: leased } = await execSql<{ host: string; endpoint: string; n: number }>(db, pg ? LEASED_PG : LEASED_SQLITE, pg ? [] : [args.now]);
  const hostBusy = new Map<string, number>();
  const endpointBusy = new Map<string, number>();
  for (const r of leased) {
    const n = Number(r.n);
    hostBusy.set(r.host, (hostBusy.get(r.host) ?? 0) + n);
    endpointBusy.set(r.endpoint, (endpointBusy.get(r.endpoint) ?? 0) + n);
  }
  const perEndpointCap = args.perEndpointCap ?? args.perHostCap;
  const endpointFree = (endpoint: string) => Math.min(perEndpointCap, args.endpointCaps?.get(endpoint) ?? perEndpointCap) - (endpointBusy.get(endpoint) ?? 0);
  const hostFree = (host: string) => args.perHostCap - (hostBusy.get(host) ?? 0);
  if (args.onlyEndpoint !== undefined) {
    // A half-open trial: one delivery of the endpoint, whoever's, within its host's cap.
    const host = laneHost(args.onlyEndpoint, hostOfEndpoint);
    if (hostFree(host) <= 0) return [];
    return claimTrial(db, pg, args, args.onlyEndpoint);
  }
  if (pg) throw new Error('the ordinary claim on PostgreSQL is claimWithFunctionPg');
  // Lanes with pending work: due (a failing receiver's retries waiting out their backoff have
  // nothing to claim) and behind a closed breaker.
  const { rows: found } = await execSql<{ endpoint: string; owner: string; due_at: number | null }>(db, LANES_TEXT, []);
  const excluded = new Set(args.excludeEndpoints);
  const lanes: Lane[] = [];
  for (const r of found) {
    if (r.due_at === null || Number(r.due_at) > args.now || excluded.has(r.endpoint)) continue;
    const host = laneHost(r.endpoint, hostOfEndpoint);
    if (args.onlyHost !== undefined && host !== args.onlyHost) continue;
    lanes.push({ endpoint: r.endpoint, owner: r.owner, host, dueAt: Number(r.due_at) });
  }
  if (lanes.length === 0) return [];
  const shares = shareSlots({
    lanes,
    limit: args.limit,
    hostFree,
    endpointFree,
    ownerHeld: (owner) => args.ownerHeld?.get(owner) ?? 0,
    perOwnerCap: args.perOwnerCap ?? Infinity,
  });
  if (shares.size === 0) return [];
  const rows = await claimLanesSqlite(db, args, shares);
  return rows.sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.created_at - b.created_at);
}

/**
 * Live leases per host and endpoint (a few per slot, however large the backlog). SQLite: from the
 * partial index of leased rows; `?` = the lease clock; `+status` keeps the planner off the status index.
 */
const LEASED_SQLITE = `select host, endpoint, count(*) as n from deliveries
    where lease_owner is not null and lease_expires_at > ? and +status = 'pending'
    group by host, endpoint`;
/** PostgreSQL: from the lease table (migration 048), each row counted while its delivery still holds that lease. */
const LEASED_PG = `select l.host, l.endpoint, count(*) as n from delivery_leases l
    cross join lateral (select 1 from deliveries d where d.id = l.delivery_id and d.lease_owner = l.lease_owner and d.lease_token = l.lease_token
      and d.lease_expires_at > ${LEASE_NOW_PG} and d.status = 'pending' limit 1) x
    group by l.host, l.endpoint`;

/** PostgreSQL: a lease taken outside the claim function (the half-open trial) is noted in the lease table too. */
const NOTE_LEASE_PG = `insert into delivery_leases (delivery_id, host, endpoint, lease_owner, lease_token) values (?, ?, ?, ?, ?)
    on conflict (delivery_id) do update set host = excluded.host, endpoint = excluded.endpoint, lease_owner = excluded.lease_owner, lease_token = excluded.lease_token`;

/**
 * The (endpoint, owner) lanes with pending deliveries, each with its earliest pending due time (the
 * first entry of the lane in the (status, endpoint, owner, next_attempt_at) index, leased ones
 * included, so a lane whose `due_at` is past may still have nothing to claim, never the reverse).
 * Endpoints are walked one index seek past the one before, then each endpoint's owners the same way.
 * (A row-value step `(endpoint, owner) > (?, ?)` would be one walk, but SQLite seeks it by
 * `endpoint` alone and then reads the whole lane.)
 */
const LANES_TEXT = `
    with recursive endpoints(e) as (
      select (select endpoint from deliveries where status = 'pending' order by endpoint limit 1)
      union all
      select (select d.endpoint from deliveries d where d.status = 'pending' and d.endpoint > endpoints.e order by d.endpoint limit 1)
      from endpoints where endpoints.e is not null
    ),
    lanes(e, o) as (
      select endpoints.e, (select d.owner from deliveries d where d.status = 'pending' and d.endpoint = endpoints.e order by d.owner limit 1)
      from endpoints where endpoints.e is not null
      union all
      select lanes.e, (select d.owner from deliveries d where d.status = 'pending' and d.endpoint = lanes.e and d.owner > lanes.o order by d.owner limit 1)
      from lanes where lanes.o is not null
    )
    select lanes.e as endpoint, lanes.o as owner,
      (select n.next_attempt_at from deliveries n where n.status = 'pending' and n.endpoint = lanes.e and n.owner = lanes.o order by n.next_attempt_at limit 1) as due_at
    from lanes
    where lanes.o is not null`;

/** What makes a delivery claimable (the lease clock `?` on SQLite), an ordered endpoint's order included (sql/ordering.ts); `y` is the delivery. */
function dueText(pg: boolean, running: number): string {
  return `y.status = 'pending' and y.next_attempt_at <= ?
        and (y.lease_owner is null or y.lease_expires_at <= ${pg ? LEASE_NOW_PG : '?'})
        and y.attempt_count < ?${running > 0 ? ` and y.id not in (${placeholders(running)})` : ''}
        and ${ORDERED_CONDITION}`;
}

function dueParams(pg: boolean, args: ClaimArgs): unknown[] {
  const params: unknown[] = [args.now];
  if (!pg) params.push(args.now);
  params.push(args.maxAttempts, ...(args.running ?? []));
  return params;
}

const texts = new Map<string, string>();
function text(key: string, build: () => string): string {
  let t = texts.get(key);
  if (t === undefined) {
    t = build();
    texts.set(key, t);
  }
  return t;
}

const SET_LEASE_PG = `set lease_owner = ?, lease_expires_at = ${LEASE_NOW_PG} + ?, attempt_count = attempt_count + 1,
      lease_token = lease_token + 1, updated_at = ?`;

/**
 * SQLite: each lane's earliest due deliveries read in index order, then each leased by its id with
 * `RETURNING *`, in the caller's write transaction (SQLite's one writer: nothing changes between the
 * read and the updates). SQLite runs the one-statement `UPDATE … WHERE id IN (…) RETURNING` through
 * an ephemeral table for the `IN` list and the returned rows: three due rows cost 155 us that way
 * against 50 us for the read and three updates by id.
 */
async function claimLanesSqlite(db: DbOrTx, args: ClaimArgs, shares: Map<Lane, number>): Promise<DeliveryRow[]> {
  const running = args.running?.length ?? 0;
  const t = text(`sqlite:lane:${running}`, () => `
      select y.id, y.endpoint_id from deliveries y
      where y.endpoint = ? and y.owner = ? and ${dueText(false, running)}
      order by y.next_attempt_at
      limit ?`);
  const due = dueParams(false, args);
  // Throttled endpoints (sql/throttle.ts): one delivery each whose slot has come, none of the others.
  const throttled = await throttledEndpoints(db, args.now);
  const taken = new Map<string, number>();
  const out: DeliveryRow[] = [];
  for (const [lane, n] of shares) {
    const { rows: ids } = await execSql<{ id: string; endpoint_id: string | null }>(db, t, [lane.endpoint, lane.owner, ...due, n]);
    for (const { id, endpoint_id: endpointId } of ids) {
      const throttle = endpointId === null ? undefined : throttled.get(endpointId);
      if (throttle) {
        if (!throttle.open) continue;
        throttle.open = false;
        taken.set(endpointId!, throttle.rate);
      }
      out.push(...(await execSql<DeliveryRow>(db, LEASE_BY_ID_SQLITE, [args.owner, args.now + args.leaseMs, args.now, id])).rows);
    }
  }
  await takeSlots(db, args.now, taken);
  return out;
}

/**
 * A half-open trial: one of the endpoint's due deliveries, whoever's, the least recently touched
 * first, so one delivery that keeps failing cannot be every trial while the others wait.
 */
async function claimTrial(db: DbOrTx, pg: boolean, args: ClaimArgs, endpoint: string): Promise<DeliveryRow[]> {
  const running = args.running?.length ?? 0;
  // A throttled webhook endpoint's delivery is a trial only once its send slot has come, and takes
  // the slot (sql/throttle.ts): a trial is a send like any other, so it counts against the rate.
  const select = `select y.id from deliveries y
      where y.endpoint = ? and ${dueText(pg, running)}
        and ${throttleOpenCondition(pg)}
      order by y.updated_at, y.next_attempt_at
      limit 1`;
  let out: DeliveryRow[];
  if (pg) {
    const t = text(`pg:trial:${running}`, () => `update deliveries ${SET_LEASE_PG} where id in (${select} for update of y skip locked) returning *`);
    out = (await execSql<DeliveryRow>(db, t, [args.owner, args.leaseMs, args.now, endpoint, ...dueParams(true, args)])).rows;
    for (const row of out) await execSql(db, NOTE_LEASE_PG, [row.id, row.host, row.endpoint, row.lease_owner, row.lease_token]);
  } else {
    const t = text(`sqlite:trial:${running}`, () => select);
    const { rows: ids } = await execSql<{ id: string }>(db, t, [endpoint, ...dueParams(false, args), args.now]);
    out = [];
    for (const { id } of ids) out.push(...(await execSql<DeliveryRow>(db, LEASE_BY_ID_SQLITE, [args.owner, args.now + args.leaseMs, args.now, id])).rows);
  }
  for (const row of out) if (row.endpoint_id !== null) await takeSlotOf(db, args.now, row.endpoint_id);
  return out;
}

/** Leases one delivery by its id (SQLite; see claimLanesSqlite). */
const LEASE_BY_ID_SQLITE = `update deliveries
    set lease_owner = ?, lease_expires_at = ?, attempt_count = attempt_count + 1, lease_token = lease_token + 1, updated_at = ?
    where id = ? returning *`;
