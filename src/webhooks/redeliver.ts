import type { DbOrTx } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import { insertDelivery } from './outbox.js';
import { getLaunchTarget } from './sql/deliveryQueries.js';

/**
 * Queues a fresh delivery of a recorded event (a new attempt series, due now) to the launch's
 * current webhook URL. The event body, id and sequence are the stored ones, so receivers dedupe it.
 * Notify the dispatcher after the surrounding transaction commits.
 */
export async function redeliverEvent(db: DbOrTx, clock: Clock, event: { eventId: string; launchId: string }): Promise<string> {
  const target = await getLaunchTarget(db, event.launchId);
  if (!target) throw new Error(`launch ${event.launchId} does not exist`);
  return insertDelivery(db, clock.now(), event.eventId, event.launchId, target.webhookUrl);
}
