import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import { ConflictError, NotFoundError } from '../../lib/errors.js';
import { findEndpoint } from './store.js';

/** The events (by their time: `since` ≤ created_at < `until`) whose failed deliveries to an endpoint a recover brings back. */
export interface RecoverWindow {
  since: number;
  /** Exclusive; undefined: up to now. */
  until?: number | undefined;
}

/**
 * Brings back every delivery to an endpoint that failed (its attempts spent, dead-lettered) whose
 * event was recorded in the window, unless that event has reached the endpoint since or is on its
 * way (another series of it delivered, pending or paused): each delivery is pending again, due now,
 * with a fresh attempt series (its attempt log keeps the old attempts; the new ones are numbered
 * from 1 again, their place in the retry schedule, and presented as series 2: docs/webhooks.md,
 * "Recover"), so the same delivery id and the same event id go out, and receivers dedupe. Its
 * open dead letter becomes `retried`. Returns the re-queued deliveries' ids, in event order. Notify
 * the dispatcher afterwards.
 */
export async function recoverEndpoint(deps: { db: Db; clock: Clock }, id: string, owner: string | undefined, window: RecoverWindow): Promise<string[]> {
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    const endpoint = await findEndpoint(trx, id, owner);
    if (!endpoint) throw new NotFoundError(`Webhook endpoint ${id} not found`);
    if (endpoint.disabled_at !== null) throw new ConflictError(`Webhook endpoint ${id} is disabled; enable it (PATCH {"disabled": false}) before recovering`, { disabledReason: endpoint.disabled_reason });
    let q = trx
      .selectFrom('deliveries as d')
      .innerJoin('outbox_events as e', 'e.id', 'd.event_id')
      .select(['d.id', 'd.event_id'])
      .where('d.endpoint_id', '=', id)
      .where('d.status', '=', 'failed')
      .where('e.created_at', '>=', window.since);
    if (window.until !== undefined) q = q.where('e.created_at', '<', window.until);
    const failed = await q
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('deliveries as later')
              .select('later.id')
              .whereRef('later.event_id', '=', 'd.event_id')
              .where('later.endpoint_id', '=', id)
              .where('later.status', 'in', ['pending', 'paused', 'delivered']),
          ),
        ),
      )
      .orderBy('e.created_at')
      .orderBy('e.sequence')
      .orderBy('d.id')
      .execute();
    const ids: string[] = [];
    const seen = new Set<string>();
    for (const d of failed) {
      if (seen.has(d.event_id)) continue; // two failed series of one event: the first comes back
      seen.add(d.event_id);
      ids.push(d.id);
    }
    if (ids.length === 0) return [];
    await trx
      .updateTable('deliveries')
      .set({ status: 'pending', attempt_count: 0, next_attempt_at: now, lease_owner: null, lease_expires_at: null, completed_at: null, updated_at: now })
      .where('id', 'in', ids)
      .where('status', '=', 'failed')
      .execute();
    await trx
      .updateTable('dead_letters')
      .set((eb) => ({ status: 'retried', retry_count: eb('retry_count', '+', 1), updated_at: now }))
      .where('delivery_id', 'in', ids)
      .where('status', '=', 'open')
      .execute();
    return ids;
  });
}
