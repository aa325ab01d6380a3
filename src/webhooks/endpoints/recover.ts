import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import { ConflictError, NotFoundError } from '../../lib/errors.js';
import { insertDelivery } from '../outbox.js';
import { findEndpoint } from './store.js';

/**
 * Re-queues every failed delivery of an endpoint created at or after `since` whose event has not
 * reached the endpoint since (no delivered or queued series of it): each gets a fresh attempt series
 * (same event, same id, so receivers dedupe) and its open dead letter becomes `retried`. The failed
 * deliveries stay as history. Returns the new deliveries' ids. Notify the dispatcher afterwards.
 */
export async function recoverEndpoint(deps: { db: Db; clock: Clock }, id: string, owner: string | undefined, since: number): Promise<string[]> {
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    const endpoint = await findEndpoint(trx, id, owner);
    if (!endpoint) throw new NotFoundError(`Webhook endpoint ${id} not found`);
    if (endpoint.disabled_at !== null) throw new ConflictError(`Webhook endpoint ${id} is disabled; enable it (PATCH {"disabled": false}) before recovering`, { disabledReason: endpoint.disabled_reason });
    const failed = await trx
      .selectFrom('deliveries')
      .select(['id', 'event_id', 'launch_id'])
      .where('endpoint_id', '=', id)
      .where('status', '=', 'failed')
      .where('created_at', '>=', since)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('deliveries as later')
              .select('later.id')
              .whereRef('later.event_id', '=', 'deliveries.event_id')
              .where('later.endpoint_id', '=', id)
              .where('later.status', 'in', ['pending', 'paused', 'delivered']),
          ),
        ),
      )
      .orderBy('created_at')
      .execute();
    const created: string[] = [];
    const seen = new Set<string>();
    for (const d of failed) {
      if (seen.has(d.event_id)) continue; // two failed series of one event: one new series
      seen.add(d.event_id);
      created.push(await insertDelivery(trx, now, d.event_id, d.launch_id, endpoint.url, id));
    }
    if (failed.length > 0) {
      await trx
        .updateTable('dead_letters')
        .set((eb) => ({ status: 'retried', retry_count: eb('retry_count', '+', 1), updated_at: now }))
        .where('delivery_id', 'in', failed.map((d) => d.id))
        .where('status', '=', 'open')
        .execute();
    }
    return created;
  });
}
