import { ownerBound } from '../bounds/ownerBounds.js';
import { DEFAULT_OWNER_LIMITS } from '../config/config.js';
import type { DbOrTx } from '../db/database.js';
import { lockBound } from '../db/dialect.js';
import type { Clock } from '../lib/clock.js';
import { ConflictError, LimitReachedError } from '../lib/errors.js';
import { insertDelivery } from './outbox.js';
import { getLaunchTarget } from './sql/deliveryQueries.js';

/**
 * Queues a fresh delivery of a recorded event (a new attempt series, due now) to the destination of
 * the delivery it repeats (`deliveryId`; none: the launch's own): the launch's current webhook URL,
 * or the webhook endpoint's current URL. Every caller (API, dead-letter retry, dashboard) names the
 * delivery, so none can send an endpoint's event to the launch's URL.
 * The event body, id and sequence are the stored ones, so receivers dedupe it.
 * An event already sent again to that destination as many times as its owner's bound allows (the
 * owner's override, else `maxRedeliveries`: MAX_REDELIVERIES_PER_DELIVERY) is refused ({@link LimitReachedError}), nothing queued.
 * Notify the dispatcher after the surrounding transaction commits.
 */
export async function redeliverEvent(
  db: DbOrTx,
  clock: Clock,
  event: { eventId: string; launchId: string; deliveryId?: string | null },
  maxRedeliveries: number = DEFAULT_OWNER_LIMITS.redeliveries,
): Promise<string> {
  if (db.isTransaction) return redeliverIn(db, clock, event, maxRedeliveries);
  return db.transaction().execute((trx) => redeliverIn(trx, clock, event, maxRedeliveries));
}

async function redeliverIn(db: DbOrTx, clock: Clock, event: { eventId: string; launchId: string; deliveryId?: string | null }, defaultMax: number): Promise<string> {
  const { endpointId, owner } = await destinationOf(db, event.launchId, event.deliveryId ?? null);
  await lockBound(db, `redeliveries:${event.eventId}`);
  const maxRedeliveries = owner === undefined ? defaultMax : await ownerBound(db, owner, 'redeliveries', defaultMax);
  // Every series of this event to this destination but the first is a redelivery.
  const { n } = await db
    .selectFrom('deliveries')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('launch_id', '=', event.launchId)
    .where('event_id', '=', event.eventId)
    .where('endpoint_id', endpointId === null ? 'is' : '=', endpointId)
    .executeTakeFirstOrThrow();
  if (Number(n) - 1 >= maxRedeliveries) {
    throw new LimitReachedError(`This event was already redelivered ${maxRedeliveries} times to this destination, the most allowed`, 'MAX_REDELIVERIES_PER_DELIVERY', maxRedeliveries);
  }
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

/** The webhook endpoint a delivery went to (null: the launch's own URL), and the owner whose bound applies. */
async function destinationOf(db: DbOrTx, launchId: string, deliveryId: string | null): Promise<{ endpointId: string | null; owner: string | undefined }> {
  if (deliveryId !== null) {
    const row = await db.selectFrom('deliveries').select(['endpoint_id', 'owner']).where('id', '=', deliveryId).executeTakeFirst();
    if (row) return { endpointId: row.endpoint_id, owner: row.owner };
  }
  const launch = await db.selectFrom('launches').select('owner').where('id', '=', launchId).executeTakeFirst();
  return { endpointId: null, owner: launch?.owner };
}
