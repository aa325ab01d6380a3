import type { DbOrTx } from '../../db/database.js';
import { execSql } from '../../db/sqlText.js';
import type { ClaimedDelivery, DeliveryOffer } from './claimWork.js';

export interface LeaseOfferedArgs {
  owner: string;
  now: number;
  leaseMs: number;
  /** Per-host in-flight cap, counting live leases of every dispatcher (as the claim does). */
  perHostCap: number;
  maxAttempts: number;
  /** At most this many are leased (the dispatcher's free slots). */
  limit: number;
  /** Whether the endpoint's breaker lets an ordinary attempt through (closed). */
  admits(endpoint: string): boolean;
  offers: readonly DeliveryOffer[];
}

export interface LeaseOfferedResult {
  claimed: ClaimedDelivery[];
  /** Offers not leased (no slot, a breaker not closed, or the row no longer as offered): an ordinary claim looks for them. */
  left: number;
}

/**
 * Leases, by id, deliveries this process has just committed and handed to its dispatcher
 * (SQLite, where this process is the only writer): the conditions of the claim (pending, due, no
 * live lease, attempts left; the host's live leases of every dispatcher under its cap, the global
 * slots, a closed breaker), the same lease, counted attempt and new fencing token, without walking
 * the hosts, reading candidates or reading what the attempt needs — the offer carries it. The lease
 * also checks that what the offer says still holds: the row's URL, and the secret it would be
 * signed with (the endpoint's, or the launch's): a destination changed since the commit (`PATCH
 * /launches/:id`, a rotated endpoint secret) leaves the delivery to an ordinary claim, which reads
 * the new one. Every offer not leased is counted in `left`. Run inside the dispatcher's write
 * transaction, after its settles.
 */
export async function leaseOffered(db: DbOrTx, args: LeaseOfferedArgs): Promise<LeaseOfferedResult> {
  const claimed: ClaimedDelivery[] = [];
  let left = 0;
  const busy = new Map<string, number>();
  const leaseExpiresAt = args.now + args.leaseMs;
  for (const offer of args.offers) {
    if (claimed.length >= args.limit || !args.admits(offer.endpoint)) {
      left += 1;
      continue;
    }
    let n = busy.get(offer.host);
    if (n === undefined) {
      const { rows } = await execSql<{ n: number }>(db, BUSY_TEXT, [offer.host, args.now]);
      n = Number(rows[0]?.n ?? 0);
    }
    if (n >= args.perHostCap) {
      busy.set(offer.host, n);
      left += 1;
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
    busy.set(offer.host, row ? n + 1 : n);
    if (row) claimed.push({ ...offer, attempt: Number(row.attempt_count), token: Number(row.lease_token), leaseExpiresAt });
    else left += 1;
  }
  return { claimed, left };
}

/** A host's live leases (every dispatcher's), from the partial index the claim counts them with. */
const BUSY_TEXT = `select count(*) as n from deliveries
    where host = ? and lease_owner is not null and status = 'pending' and lease_expires_at > ?`;

/**
 * The claim's lease of one delivery, under the claim's conditions, while its URL and signing secret
 * are still the offer's (an endpoint delivery's endpoint secret, else the launch's).
 */
const LEASE_TEXT = `update deliveries
    set lease_owner = ?, lease_expires_at = ?, attempt_count = attempt_count + 1, lease_token = lease_token + 1, updated_at = ?
    where id = ? and url = ? and status = 'pending' and next_attempt_at <= ? and (lease_owner is null or lease_expires_at <= ?) and attempt_count < ?
      and ? = coalesce((select w.secret_enc from webhook_endpoints w where w.id = deliveries.endpoint_id), (select l.webhook_secret_enc from launches l where l.id = deliveries.launch_id))
    returning attempt_count, lease_token`;
