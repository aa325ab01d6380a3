import type { DbOrTx } from '../../db/database.js';
import type { DeliveryRow } from '../../db/schema.js';

export interface ClaimArgs {
  owner: string;
  now: number;
  leaseMs: number;
  /** At most this many deliveries (the free global in-flight slots). */
  limit: number;
  /** Per-host in-flight cap, counting live leases of every dispatcher. */
  perHostCap: number;
  /** Hosts whose breaker is not closed. */
  excludeHosts: string[];
  /** Claim only for this host (the half-open trial). */
  onlyHost?: string;
}

/**
 * Atomically leases due deliveries in one `UPDATE … RETURNING`: pending, due, not leased (or the
 * lease expired, so a crashed dispatcher's work is reclaimed), and within the host's in-flight cap.
 * Claiming counts the attempt, so a crash mid-attempt still consumes it.
 */
export async function claimDueDeliveries(db: DbOrTx, args: ClaimArgs): Promise<DeliveryRow[]> {
  if (args.limit <= 0) return [];
  const rows = await db
    .updateTable('deliveries')
    .set((eb) => ({
      lease_owner: args.owner,
      lease_expires_at: args.now + args.leaseMs,
      attempt_count: eb('attempt_count', '+', 1),
      updated_at: args.now,
    }))
    .where('id', 'in', (eb) =>
      eb
        .selectFrom((qb) =>
          qb
            .selectFrom('deliveries as d')
            // Live leases per host, counted once per host (not once per candidate row).
            .leftJoin(
              (sub) =>
                sub
                  .selectFrom('deliveries as b')
                  .select((b) => ['b.host', b.fn.countAll<number>().as('n')])
                  .where('b.status', '=', 'pending')
                  .where('b.lease_owner', 'is not', null)
                  .where('b.lease_expires_at', '>', args.now)
                  .groupBy('b.host')
                  .as('busy'),
              (join) => join.onRef('busy.host', '=', 'd.host'),
            )
            .select((e) => [
              'd.id',
              'd.next_attempt_at',
              'd.created_at',
              e.fn.agg<number>('row_number').over((ob) => ob.partitionBy('d.host').orderBy('d.next_attempt_at').orderBy('d.created_at')).as('rn'),
              e.fn.coalesce('busy.n', e.lit(0)).as('busy'),
            ])
            .where('d.status', '=', 'pending')
            .where('d.next_attempt_at', '<=', args.now)
            // Hosts already at their cap are left out before ranking: a saturated host's backlog costs nothing.
            .where('d.host', 'not in', (e) =>
              e
                .selectFrom('deliveries as f')
                .select('f.host')
                .where('f.status', '=', 'pending')
                .where('f.lease_owner', 'is not', null)
                .where('f.lease_expires_at', '>', args.now)
                .groupBy('f.host')
                .having((h) => h.fn.countAll(), '>=', args.perHostCap),
            )
            .where((w) => w.or([w('d.lease_owner', 'is', null), w('d.lease_expires_at', '<=', args.now)]))
            .$if(args.excludeHosts.length > 0, (q) => q.where('d.host', 'not in', args.excludeHosts))
            .$if(args.onlyHost !== undefined, (q) => q.where('d.host', '=', args.onlyHost!))
            .as('ranked'),
        )
        .select('ranked.id')
        .where((w) => w(w('ranked.rn', '+', w.ref('ranked.busy')), '<=', args.perHostCap))
        .orderBy('ranked.next_attempt_at')
        .orderBy('ranked.created_at')
        .limit(args.limit),
    )
    .returningAll()
    .execute();
  return rows.sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.created_at - b.created_at);
}
