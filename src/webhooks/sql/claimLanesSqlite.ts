import type { DbOrTx } from '../../db/database.js';
import type { DeliveryRow } from '../../db/schema.js';
import { execSql } from '../../db/sqlText.js';
import { hostOfEndpoint } from '../endpointKey.js';
import type { ClaimArgs, SendAllowance } from './claimArgs.js';
import { dueParams, dueText, freeSlots, LEASE_BY_ID_SQLITE, text } from './claimDue.js';
import { laneHost, shareSlots, type Lane } from './shareSlots.js';
import { takeSlots, throttledEndpoints } from './throttle.js';

/**
 * SQLite's ordinary claim, in the dispatcher's write transaction: the lanes with due work (not
 * behind an open breaker), the free slots shared out by {@link shareSlots}, each lane's share leased;
 * the owner's send allowance at each lane's endpoint goes to `allowances`.
 */
export async function claimLanesSqlite(db: DbOrTx, args: ClaimArgs, allowances?: SendAllowance[]): Promise<DeliveryRow[]> {
  const { hostFree, endpointFree, allowance } = await freeSlots(db, args);
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
  if (allowances) for (const endpoint of new Set(lanes.map((l) => l.endpoint))) allowances.push(allowance(laneHost(endpoint, hostOfEndpoint), endpoint));
  const shares = shareSlots({
    lanes,
    limit: args.limit,
    hostFree,
    endpointFree,
    ownerHeld: (owner) => args.ownerHeld?.get(owner) ?? 0,
    perOwnerCap: args.perOwnerCap ?? Infinity,
  });
  if (shares.size === 0) return [];
  const rows = await leaseShares(db, args, shares);
  return rows.sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.created_at - b.created_at);
}

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

/**
 * Each lane's earliest due deliveries read in index order, then each leased by its id with
 * `RETURNING *`, in the caller's write transaction (SQLite's one writer: nothing changes between the
 * read and the updates). SQLite runs the one-statement `UPDATE … WHERE id IN (…) RETURNING` through
 * an ephemeral table for the `IN` list and the returned rows: three due rows cost 155 us that way
 * against 50 us for the read and three updates by id.
 */
async function leaseShares(db: DbOrTx, args: ClaimArgs, shares: Map<Lane, number>): Promise<DeliveryRow[]> {
  const running = args.running?.length ?? 0;
  // The ordering condition's subqueries cost ~50 us a read even with no row to test; without an
  // ordered endpoint (read in this write transaction, so none appears before the reads) it is left out.
  const ordered = (await execSql(db, ANY_ORDERED_SQLITE, [])).rows.length > 0;
  const t = text(`sqlite:lane:${running}:${ordered}`, () => `
      select y.id, y.endpoint_id from deliveries y
      where y.endpoint = ? and y.owner = ? and ${dueText(false, running, ordered)}
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

/** Whether any endpoint orders its deliveries (the partial index of migration 041). */
const ANY_ORDERED_SQLITE = `select 1 as o from webhook_endpoints where ordering is not null limit 1`;
