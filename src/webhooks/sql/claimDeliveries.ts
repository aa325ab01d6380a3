import { sql } from 'kysely';
import type { DbOrTx } from '../../db/database.js';
import type { DeliveryRow } from '../../db/schema.js';
import { isPostgres, leaseDeadline, leaseNow } from '../../db/dialect.js';
import { execSql, placeholders } from '../../db/sqlText.js';

export interface ClaimArgs {
  owner: string;
  now: number;
  leaseMs: number;
  /** At most this many deliveries (the free global in-flight slots). */
  limit: number;
  /** Per-host in-flight cap, counting live leases of every dispatcher. */
  perHostCap: number;
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
 * Leases due deliveries with `UPDATE … RETURNING`: pending, due, not leased (or the
 * lease expired, so a crashed dispatcher's work is reclaimed), and within the host's in-flight cap.
 * Claiming counts the attempt, so a crash mid-attempt still consumes it, and bumps the fencing token
 * that the settle must name. A delivery whose attempts are spent is not a candidate: it is failed
 * and dead-lettered by `failSpentDeliveriesIn` instead, so no claim ever hands out attempt N+1.
 *
 * The cost does not grow with the backlog: hosts with pending work are found by skipping through
 * the (status, host, next_attempt_at) index one host at a time, each host contributes at most
 * `perHostCap` candidates read in due order from that index, and live leases are counted once per
 * host from a partial index (migration 004); a host already at its cap contributes no candidates.
 * When only a few hosts have free slots and each can fill them all (the common case), each host's
 * deliveries are leased by a small statement of its own in index order; otherwise only the few
 * candidates are ranked in one statement. Run inside a write transaction (SQLite: the dispatcher's
 * own; PostgreSQL: under the claim lock), so the lease counts read first still hold at the update.
 */
export async function claimDueDeliveries(db: DbOrTx, args: ClaimArgs): Promise<DeliveryRow[]> {
  if (args.limit <= 0) return [];
  if (!isPostgres(db)) return claimIn(db, args);
  // PostgreSQL, several instances: the per-host cap counts every instance's live leases, which two
  // claims running at once would not see of each other. Claims therefore take turns on one
  // transaction-scoped advisory lock (held from the claim to its commit, a few ms), so each sees
  // the leases of the one before it; SKIP LOCKED still keeps them clear of rows others are settling.
  if (db.isTransaction) {
    await lockClaims(db);
    return claimIn(db, args);
  }
  return db.transaction().execute(async (trx) => {
    await lockClaims(trx);
    return claimIn(trx, args);
  });
}

/** Any constant both sides agree on: the key of the delivery-claim advisory lock. */
const CLAIM_LOCK_KEY = 0x64_6c_76_63; // 'dlvc'

async function lockClaims(trx: DbOrTx): Promise<void> {
  await sql`select pg_advisory_xact_lock(${CLAIM_LOCK_KEY})`.execute(trx);
}

/**
 * Per-host claims, one small statement each, when at most this many hosts have free slots (the
 * common case: a few busy receivers); beyond that, the single ranking statement.
 */
const MAX_HOSTS_CLAIMED_ONE_BY_ONE = 4;

async function claimIn(db: DbOrTx, args: ClaimArgs): Promise<DeliveryRow[]> {
  const pg = isPostgres(db);
  // Hosts with pending work and their live leases (every dispatcher's): skipping through the
  // (status, host, next_attempt_at) index one host at a time, leases counted from the partial index.
  const onlyHost = args.onlyHost !== undefined;
  const hostParams: unknown[] = pg ? [] : [args.now];
  if (onlyHost) hostParams.push(args.onlyHost);
  const { rows: hosts } = await execSql<{ host: string; busy: number; due_at: number | null }>(db, hostsText(pg, onlyHost), hostParams);
  const free: Array<{ host: string; slots: number }> = [];
  let slots = 0;
  for (const h of hosts) {
    const n = args.perHostCap - Number(h.busy);
    // A host whose earliest pending delivery is not due yet (a failing receiver's retries waiting
    // out their backoff) has nothing to claim: no statement of its own, and no share of the limit.
    if (n <= 0 || h.due_at === null || Number(h.due_at) > args.now) continue;
    free.push({ host: h.host, slots: n });
    slots += n;
  }
  if (free.length === 0) return [];
  // When every host with a free slot can fill all of them (or there is only one), each host's claim
  // is the one the ranking statement would make: its earliest due deliveries, up to its free slots.
  if (free.length === 1 || (free.length <= MAX_HOSTS_CLAIMED_ONE_BY_ONE && slots <= args.limit)) {
    const out: DeliveryRow[] = [];
    let room = args.limit;
    for (const h of free) {
      if (room <= 0) break;
      const rows = await claimHost(db, pg, args, h.host, Math.min(room, h.slots));
      room -= rows.length;
      out.push(...rows);
    }
    return out.sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.created_at - b.created_at);
  }
  return claimRanked(db, args);
}

const hostTexts = new Map<string, string>();

/**
 * Hosts with pending deliveries, each one's live leases and its earliest pending due time (the first
 * entry of the host in the (status, host, next_attempt_at) index, leased ones included, so a host
 * whose `due_at` is past may still have nothing to claim, never the reverse); `?` = the lease clock
 * on SQLite, then the host when `onlyHost`.
 */
function hostsText(pg: boolean, onlyHost: boolean): string {
  const key = `${pg}:${onlyHost}`;
  let text = hostTexts.get(key);
  if (text === undefined) {
    text = `
    with recursive hosts(h) as (
      select (select host from deliveries where status = 'pending' order by host limit 1)
      union all
      select (select host from deliveries where status = 'pending' and host > hosts.h order by host limit 1) from hosts where hosts.h is not null
    )
    select hosts.h as host,
      (select count(*) from deliveries b
        where b.host = hosts.h and b.lease_owner is not null and b.status = 'pending' and b.lease_expires_at > ${pg ? LEASE_NOW_PG : '?'}) as busy,
      (select min(n.next_attempt_at) from deliveries n where n.status = 'pending' and n.host = hosts.h) as due_at
    from hosts
    where hosts.h is not null${onlyHost ? ' and hosts.h = ?' : ''}`;
    hostTexts.set(key, text);
  }
  return text;
}

const LEASE_NOW_PG = '(extract(epoch from now()) * 1000)::bigint';
const claimTexts = new Map<string, string>();

/**
 * Leases up to `limit` of one host's due deliveries, earliest due first (the order of the
 * (status, host, next_attempt_at) index, so nothing is sorted). Same conditions as the ranking
 * statement's candidates; the caller has counted the host's leases.
 *
 * PostgreSQL: one `UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED) RETURNING *`. SQLite: the
 * candidates' ids are read, then each is leased by its id with `RETURNING *`, in the caller's write
 * transaction (SQLite's one writer: nothing changes between the read and the updates). SQLite runs
 * the one-statement form through an ephemeral table for the `IN` list and the returned rows: three
 * due rows cost 155 us that way against 50 us for the read and three updates by id.
 */
async function claimHost(db: DbOrTx, pg: boolean, args: ClaimArgs, host: string, limit: number): Promise<DeliveryRow[]> {
  const excluded = args.excludeEndpoints.length;
  const running = args.running?.length ?? 0;
  const trial = args.onlyEndpoint !== undefined;
  const key = `${pg}:${excluded}:${running}:${trial}`;
  let text = claimTexts.get(key);
  if (text === undefined) {
    const leaseClock = pg ? LEASE_NOW_PG : '?';
    const candidates = `
      select y.id from deliveries y
      where y.status = 'pending' and y.host = ? and y.next_attempt_at <= ?
        and (y.lease_owner is null or y.lease_expires_at <= ${leaseClock})${excluded > 0 ? ` and y.endpoint not in (${placeholders(excluded)})` : ''}${trial ? ' and y.endpoint = ?' : ''}
        and y.attempt_count < ?${running > 0 ? ` and y.id not in (${placeholders(running)})` : ''}
      order by ${trial ? 'y.updated_at, y.next_attempt_at' : 'y.next_attempt_at'}
      limit ?`;
    text = pg
      ? `
    update deliveries
    set lease_owner = ?, lease_expires_at = ${LEASE_NOW_PG} + ?, attempt_count = attempt_count + 1,
      lease_token = lease_token + 1, updated_at = ?
    where id in (${candidates} for update of y skip locked)
    returning *`
      : candidates;
    claimTexts.set(key, text);
  }
  const params: unknown[] = pg ? [args.owner, args.leaseMs, args.now] : [];
  params.push(host, args.now);
  if (!pg) params.push(args.now);
  params.push(...args.excludeEndpoints);
  if (trial) params.push(args.onlyEndpoint);
  params.push(args.maxAttempts);
  if (running > 0) params.push(...args.running!);
  params.push(limit);
  if (pg) return (await execSql<DeliveryRow>(db, text, params)).rows;
  const { rows: ids } = await execSql<{ id: string }>(db, text, params);
  const out: DeliveryRow[] = [];
  for (const { id } of ids) {
    const { rows } = await execSql<DeliveryRow>(db, LEASE_BY_ID_SQLITE, [args.owner, args.now + args.leaseMs, args.now, id]);
    out.push(...rows);
  }
  return out;
}

/** Leases one delivery by its id (SQLite; see claimHost). */
const LEASE_BY_ID_SQLITE = `update deliveries
    set lease_owner = ?, lease_expires_at = ?, attempt_count = attempt_count + 1, lease_token = lease_token + 1, updated_at = ?
    where id = ? returning *`;

/** The claim over many hosts at once: candidates per host, ranked by due time, the global limit applied. */
async function claimRanked(db: DbOrTx, args: ClaimArgs): Promise<DeliveryRow[]> {
  const excluded = args.excludeEndpoints.length > 0 ? sql`and y.endpoint not in (${sql.join(args.excludeEndpoints)})` : sql``;
  const only = args.onlyHost !== undefined ? sql`and hosts.h = ${args.onlyHost}` : sql``;
  const running = args.running && args.running.length > 0 ? sql`and y.id not in (${sql.join([...args.running])})` : sql``;
  const onlyEndpoint = args.onlyEndpoint !== undefined ? sql`and y.endpoint = ${args.onlyEndpoint}` : sql``;
  // A trial takes turns among the endpoint's waiting deliveries (least recently touched first), so
  // one delivery that keeps failing cannot be every trial while the others wait.
  const order = args.onlyEndpoint !== undefined ? sql`y.updated_at, y.next_attempt_at` : sql`y.next_attempt_at`;
  // Lease deadlines: the lease clock here, the database's on PostgreSQL (src/db/dialect.ts).
  const leaseClock = leaseNow(db, args.now);
  // PostgreSQL: the candidates are locked where they are picked, so concurrent claimers in other
  // processes skip them instead of claiming them twice or waiting; the ranking above stays unlocked.
  const lock = isPostgres(db) ? sql`for update of y skip locked` : sql``;
  const due = sql`y.status = 'pending' and y.host = bh.host and y.next_attempt_at <= ${args.now}
          and (y.lease_owner is null or y.lease_expires_at <= ${leaseClock}) ${excluded} ${onlyEndpoint}
          and y.attempt_count < ${args.maxAttempts} ${running}`;
  // Each host's first few due deliveries. PostgreSQL: a LATERAL subquery runs once per host; the
  // `c.id in (…)` form SQLite plans well runs its subquery once per row of the table there (and
  // locks as it goes), so a claim cost grew with the backlog (3000 pending: 0.2-2 s per claim).
  const candidates = isPostgres(db)
    ? sql`
      select c.id, c.host, c.next_attempt_at, c.created_at, bh.busy from busy_hosts bh
      cross join lateral (
        select y.id, y.host, y.next_attempt_at, y.created_at from deliveries y
        where ${due} and bh.busy < ${args.perHostCap}
        order by ${order}
        limit ${args.perHostCap} ${lock}) c`
    : sql`
      select c.id, c.host, c.next_attempt_at, c.created_at, bh.busy from busy_hosts bh
      join deliveries c on c.id in (
        select y.id from deliveries y
        where ${due}
        order by ${order}
        limit ${args.perHostCap} ${lock})
      where bh.busy < ${args.perHostCap}`;
  const pg = isPostgres(db);
  // SQLite: the ranked ids are read, then leased by id (see claimHost); PostgreSQL: one statement.
  const claim = pg
    ? sql`update deliveries
    set lease_owner = ${args.owner}, lease_expires_at = ${leaseDeadline(db, args.now, args.leaseMs)}, attempt_count = attempt_count + 1,
      lease_token = lease_token + 1, updated_at = ${args.now}
    where id in (select id from ranked where rn + busy <= ${args.perHostCap} order by next_attempt_at, created_at limit ${args.limit})
    returning *`
    : sql`select id from ranked where rn + busy <= ${args.perHostCap} order by next_attempt_at, created_at limit ${args.limit}`;
  const { rows: picked } = await sql<DeliveryRow>`
    with recursive hosts(h) as (
      select (select host from deliveries where status = 'pending' order by host limit 1)
      union all
      select (select host from deliveries where status = 'pending' and host > hosts.h order by host limit 1) from hosts where hosts.h is not null
    ),
    busy_hosts as (
      select hosts.h as host,
        (select count(*) from deliveries b
          where b.host = hosts.h and b.lease_owner is not null and b.status = 'pending' and b.lease_expires_at > ${leaseClock}) as busy
      from hosts
      where hosts.h is not null ${only}
    ),
    candidates as (${candidates}),
    ranked as (
      select k.id, k.next_attempt_at, k.created_at, k.busy,
        row_number() over (partition by k.host order by k.next_attempt_at, k.created_at) as rn
      from candidates k
    )
    ${claim}`.execute(db);
  let rows = picked;
  if (!pg) {
    rows = [];
    for (const { id } of picked) rows.push(...(await execSql<DeliveryRow>(db, LEASE_BY_ID_SQLITE, [args.owner, args.now + args.leaseMs, args.now, id])).rows);
  }
  return rows.sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.created_at - b.created_at);
}
