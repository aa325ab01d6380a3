import type { DbOrTx } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import { ConflictError } from '../lib/errors.js';
import { insertDelivery } from './outbox.js';
import { getLaunchTarget } from './sql/deliveryQueries.js';

/**
 * Queues a fresh delivery of a recorded event (a new attempt series, due now) to the destination of
 * the delivery it repeats (`deliveryId`; none: the launch's own): the launch's current webhook URL,
 * or the webhook endpoint's current URL. Every caller (API, dead-letter retry, dashboard) names the
 * delivery, so none can send an endpoint's event to the launch's URL.
 * The event body, id and sequence are the stored ones, so receivers dedupe it.
 * Notify the dispatcher after the surrounding transaction commits.
 */
export async function redeliverEvent(db: DbOrTx, clock: Clock, event: { eventId: string; launchId: string; deliveryId?: string | null }): Promise<string> {
  const endpointId = await endpointOfDelivery(db, event.deliveryId ?? null);
  if (endpointId) {
    const endpoint = await db.selectFrom('webhook_endpoints').select(['url', 'disabled_at']).where('id', '=', endpointId).executeTakeFirst();
    if (!endpoint) throw new ConflictError(`Webhook endpoint ${endpointId} was deleted; its deliveries cannot be repeated`);
    if (endpoint.disabled_at !== null) throw new ConflictError(`Webhook endpoint ${endpointId} is disabled; enable it first`);
    return insertDelivery(db, clock.now(), event.eventId, event.launchId, endpoint.url, endpointId);
  }
  const target = await getLaunchTarget(db, event.launchId);
  if (!target) throw new Error(`launch ${event.launchId} does not exist`);
  return insertDelivery(db, clock.now(), event.eventId, event.launchId, target.webhookUrl);
}

/** The webhook endpoint a delivery went to (null: the launch's own URL). */
async function endpointOfDelivery(db: DbOrTx, deliveryId: string | null): Promise<string | null> {
  if (deliveryId === null) return null;
  const row = await db.selectFrom('deliveries').select('endpoint_id').where('id', '=', deliveryId).executeTakeFirst();
  return row?.endpoint_id ?? null;
}
