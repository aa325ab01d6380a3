import type { DbOrTx } from '../../db/database.js';
import { isPostgres } from '../../db/dialect.js';
import { execSql, placeholders } from '../../db/sqlText.js';
import type { ClaimArgs, SendAllowance } from './claimArgs.js';
import { ORDERED_CONDITION } from './ordering.js';

/** Free lease slots per host and per endpoint, from every dispatcher's live leases, and the claiming owner's send allowance. */
export interface FreeSlots {
  /** Leases a host may still take: its cap (plus the prefetch while no other owner holds a live lease there), less every owner's live leases. */
  hostFree(host: string): number;
  /** Leases an endpoint may still take: its cap (plus the lesser of it and the prefetch while no other owner holds one there), less every owner's live leases. */
  endpointFree(endpoint: string): number;
  /** What the claiming owner may have in flight there: the caps less the other owners' live leases. */
  allowance(host: string, endpoint: string): SendAllowance;
}

/** Counts the live leases of every dispatcher per host and endpoint (the partial index of leased rows) against the claim's caps. */
export async function freeSlots(db: DbOrTx, args: ClaimArgs): Promise<FreeSlots> {
  const pg = isPostgres(db);
  const { rows: leased } = await execSql<{ host: string; endpoint: string; lease_owner: string; n: number }>(db, pg ? LEASED_PG : LEASED_SQLITE, pg ? [] : [args.now]);
  const hostBusy = new Map<string, number>();
  const endpointBusy = new Map<string, number>();
  const hostOthers = new Map<string, number>();
  const endpointOthers = new Map<string, number>();
  for (const r of leased) {
    const n = Number(r.n);
    add(hostBusy, r.host, n);
    add(endpointBusy, r.endpoint, n);
    if (r.lease_owner === args.owner) continue;
    add(hostOthers, r.host, n);
    add(endpointOthers, r.endpoint, n);
  }
  const prefetch = Math.max(0, args.prefetch ?? 0);
  const perEndpointCap = args.perEndpointCap ?? args.perHostCap;
  const endpointCap = (endpoint: string) => Math.min(perEndpointCap, args.endpointCaps?.get(endpoint) ?? perEndpointCap);
  return {
    endpointFree: (endpoint) => endpointCap(endpoint) + (endpointOthers.has(endpoint) ? 0 : Math.min(prefetch, endpointCap(endpoint))) - (endpointBusy.get(endpoint) ?? 0),
    hostFree: (host) => args.perHostCap + (hostOthers.has(host) ? 0 : prefetch) - (hostBusy.get(host) ?? 0),
    allowance: (host, endpoint) => ({
      host,
      endpoint,
      hostAllowance: Math.max(0, args.perHostCap - (hostOthers.get(host) ?? 0)),
      endpointAllowance: Math.max(0, endpointCap(endpoint) - (endpointOthers.get(endpoint) ?? 0)),
    }),
  };
}

function add(counts: Map<string, number>, key: string, n: number): void {
  counts.set(key, (counts.get(key) ?? 0) + n);
}

/** PostgreSQL's lease clock, in milliseconds. */
export const LEASE_NOW_PG = '(extract(epoch from now()) * 1000)::bigint';

/**
 * Live leases per host and endpoint (a few per slot, however large the backlog). SQLite: from the
 * partial index of leased rows; `?` = the lease clock; `+status` keeps the planner off the status index.
 */
const LEASED_SQLITE = `select host, endpoint, lease_owner, count(*) as n from deliveries
    where lease_owner is not null and lease_expires_at > ? and +status = 'pending'
    group by host, endpoint, lease_owner`;
/** PostgreSQL: from the lease table (migration 048), each row counted while its delivery still holds that lease. */
const LEASED_PG = `select l.host, l.endpoint, l.lease_owner, count(*) as n from delivery_leases l
    cross join lateral (select 1 from deliveries d where d.id = l.delivery_id and d.lease_owner = l.lease_owner and d.lease_token = l.lease_token
      and d.lease_expires_at > ${LEASE_NOW_PG} and d.status = 'pending' limit 1) x
    group by l.host, l.endpoint, l.lease_owner`;

/**
 * What makes a delivery claimable (the lease clock `?` on SQLite), an ordered endpoint's order
 * included (sql/ordering.ts) unless `ordered` is false (the caller saw no ordered endpoint in the
 * same write transaction); `y` is the delivery.
 */
export function dueText(pg: boolean, running: number, ordered = true): string {
  return `y.status = 'pending' and y.next_attempt_at <= ?
        and (y.lease_owner is null or y.lease_expires_at <= ${pg ? LEASE_NOW_PG : '?'})
        and y.attempt_count < ?${running > 0 ? ` and y.id not in (${placeholders(running)})` : ''}${ordered ? `
        and ${ORDERED_CONDITION}` : ''}`;
}

/** {@link dueText}'s parameters. */
export function dueParams(pg: boolean, args: ClaimArgs): unknown[] {
  const params: unknown[] = [args.now];
  if (!pg) params.push(args.now);
  params.push(args.maxAttempts, ...(args.running ?? []));
  return params;
}

const texts = new Map<string, string>();
/** A statement's text, built once per shape (the number of running ids changes it). */
export function text(key: string, build: () => string): string {
  let t = texts.get(key);
  if (t === undefined) {
    t = build();
    texts.set(key, t);
  }
  return t;
}

/** Leases one delivery by its id (SQLite; see sql/claimLanesSqlite.ts). */
export const LEASE_BY_ID_SQLITE = `update deliveries
    set lease_owner = ?, lease_expires_at = ?, attempt_count = attempt_count + 1, lease_token = lease_token + 1, updated_at = ?
    where id = ? returning *`;
