import type { DbOrTx } from '../../db/database.js';
import { execSql } from '../../db/sqlText.js';
import type { ClaimedDelivery, DeliveryOffer } from './claimWork.js';

export interface LeaseOfferedArgs {
  owner: string;
  now: number;
  leaseMs: number;
  /** Per-host in-flight cap; a host's live leases of every dispatcher stay within it plus `prefetch` (as the claim's). */
  perHostCap: number;
  /** Per-endpoint in-flight cap, the same way (default: the per-host cap; the prefetch at most the cap again). */
  perEndpointCap?: number;
  /** Deliveries per host leased beyond the cap (ClaimArgs.prefetch; default 0). */
  prefetch?: number;
  /** Lower caps of some endpoints (slow ones), by endpoint. */
  endpointCaps?: ReadonlyMap<string, number>;
  /** At most this many deliveries of one owner held by this dispatcher (default: no bound). */
  perOwnerCap?: number;
  /** Deliveries of each owner this dispatcher holds now. */
  ownerHeld?: ReadonlyMap<string, number>;
  maxAttempts: number;
  /** At most this many are leased (the dispatcher's free slots). */
  limit: number;
  /** Whether the endpoint's breaker lets an ordinary attempt through (closed). */
  admits(endpoint: string): boolean;
  offers: readonly DeliveryOffer[];
}

export interface LeaseOfferedResult {
  claimed: ClaimedDelivery[];
  /** Offers not leased (no slot, a breaker not closed, or the row no longer as offered), `waiting` included. */
  left: number;
  /** The offers among `left` that only wanted a slot (the limit, the owner's, host's or endpoint's cap), in their order: they may be offered again once slots free. */
  waiting: DeliveryOffer[];
}

/**
 * Leases, by id, deliveries this process has just committed and handed to its dispatcher
 * (SQLite, where this process is the only writer): the conditions of the claim (pending, due, no
 * live lease, attempts left; the host's and the endpoint's live leases of every dispatcher under
 * their caps, the owner's held deliveries under its cap, the global slots, a closed breaker; offers
 * taken round-robin by owner, the one holding the fewest first), the same lease, counted attempt and
 * new fencing token, without walking the lanes, reading candidates or reading what the attempt
 * needs — the offer carries it. The lease
 * also checks that what the offer says still holds: the row's URL, and the secret it would be
 * signed with (the endpoint's, or the launch's): a destination changed since the commit (`PATCH
 * /launches/:id`, a rotated endpoint secret) leaves the delivery to an ordinary claim, which reads
 * the new one; so does a throttle or an ordering set on its endpoint since (the claim gives it a send
 * slot, or waits for the launch's earlier events). Every offer not leased is counted in `left`. Run inside the dispatcher's write
 * transaction, after its settles.
 */
export async function leaseOffered(db: DbOrTx, args: LeaseOfferedArgs): Promise<LeaseOfferedResult> {
  const claimed: ClaimedDelivery[] = [];
  const waiting: DeliveryOffer[] = [];
  let left = 0;
  const busy = new Map<string, number>();
  const endpointBusy = new Map<string, number>();
  const ownerLoad = new Map(args.ownerHeld ?? []);
  const perOwnerCap = args.perOwnerCap ?? Infinity;
  const perEndpointCap = args.perEndpointCap ?? args.perHostCap;
  const prefetch = Math.max(0, args.prefetch ?? 0);
  const leaseExpiresAt = args.now + args.leaseMs;
  for (const offer of fairOrder(args.offers, ownerLoad)) {
    const owner = offer.ctx.owner;
    if (!args.admits(offer.endpoint)) {
      left += 1;
      continue;
    }
    if (claimed.length >= args.limit || (ownerLoad.get(owner) ?? 0) >= perOwnerCap) {
      left += 1;
      waiting.push(offer);
      continue;
    }
    let n = busy.get(offer.host);
    let e = endpointBusy.get(offer.endpoint);
    if (n === undefined || e === undefined) {
      const { rows } = await execSql<{ n: number; e: number | null }>(db, BUSY_TEXT, [offer.endpoint, offer.host, args.now]);
      n ??= Number(rows[0]?.n ?? 0);
      e ??= Number(rows[0]?.e ?? 0);
    }
    busy.set(offer.host, n);
    endpointBusy.set(offer.endpoint, e);
    const endpointCap = Math.min(perEndpointCap, args.endpointCaps?.get(offer.endpoint) ?? perEndpointCap);
    if (n >= args.perHostCap + prefetch || e >= endpointCap + Math.min(prefetch, endpointCap)) {
      left += 1;
      waiting.push(offer);
      continue;
    }
    const { rows } = await execSql<{ attempt_count: number; lease_token: number }>(db, LEASE_TEXT, [
      args.owner,
      leaseExpiresAt,
      args.now,
      offer.id,
      offer.url,
      args.now,
      args.now,
      args.maxAttempts,
      offer.ctx.secretSealed,
    ]);
    const row = rows[0];
    if (row) {
      busy.set(offer.host, n + 1);
      endpointBusy.set(offer.endpoint, e + 1);
      ownerLoad.set(owner, (ownerLoad.get(owner) ?? 0) + 1);
    }
    if (row) claimed.push({ ...offer, attempt: Number(row.attempt_count), token: Number(row.lease_token), leaseExpiresAt });
    else left += 1;
  }
  return { claimed, left, waiting };
}

/**
 * Offers in the order the claim would share slots: round-robin by owner, the owner holding the
 * fewest first (its held deliveries plus its offers before this one), commit order within an owner.
 */
function fairOrder(offers: readonly DeliveryOffer[], held: ReadonlyMap<string, number>): DeliveryOffer[] {
  if (offers.length < 2) return [...offers];
  const seen = new Map<string, number>();
  const keyed = offers.map((offer, i) => {
    const k = seen.get(offer.ctx.owner) ?? held.get(offer.ctx.owner) ?? 0;
    seen.set(offer.ctx.owner, k + 1);
    return { offer, k, i };
  });
  keyed.sort((a, b) => a.k - b.k || a.i - b.i);
  return keyed.map((x) => x.offer);
}

/**
 * A host's live leases (every dispatcher's), and those of one endpoint of it, from the partial index
 * the claim counts them with; `+status` keeps SQLite's planner on that index.
 */
const BUSY_TEXT = `select count(*) as n, sum(case when endpoint = ? then 1 else 0 end) as e from deliveries
    where host = ? and lease_owner is not null and +status = 'pending' and lease_expires_at > ?`;

/**
 * The claim's lease of one delivery, under the claim's conditions, while its URL and signing secret
 * are still the offer's (an endpoint delivery's endpoint secret, else the launch's).
 */
const LEASE_TEXT = `update deliveries
    set lease_owner = ?, lease_expires_at = ?, attempt_count = attempt_count + 1, lease_token = lease_token + 1, updated_at = ?
    where id = ? and url = ? and status = 'pending' and next_attempt_at <= ? and (lease_owner is null or lease_expires_at <= ?) and attempt_count < ?
      and ? = coalesce((select w.secret_enc from webhook_endpoints w where w.id = deliveries.endpoint_id), (select l.webhook_secret_enc from launches l where l.id = deliveries.launch_id))
      and (endpoint_id is null or not exists (select 1 from webhook_endpoints w where w.id = deliveries.endpoint_id and (w.rate_limit_per_second is not null or w.ordering is not null)))
    returning attempt_count, lease_token`;
