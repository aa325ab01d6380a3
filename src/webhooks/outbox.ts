import type { DbOrTx } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import { endpointKey } from './endpointKey.js';
import { filterMatches } from './endpoints/filters.js';
import { enabledEndpointsOf } from './endpoints/store.js';

/** The webhook envelope (docs/events.md). Its serialized form is the body of every attempt. */
export interface WebhookEnvelope<T = unknown> {
  id: string;
  event: string;
  timestamp: string;
  launchId: string;
  sequence: number;
  data: T;
}

export interface RecordEventInput {
  launchId: string;
  event: string;
  data: unknown;
  /** The id of the API request that caused the event, sent back as X-Request-ID. */
  requestId?: string | null;
}

export interface RecordedEvent {
  eventId: string;
  sequence: number;
  deliveryId: string;
  envelope: WebhookEnvelope;
}

/** Lets the dispatcher wake at once when an event has committed. */
export interface OutboxSignal {
  notify(): void;
}

export const noopSignal: OutboxSignal = { notify: () => undefined };

/** The endpoint host a breaker is keyed by: `host[:port]` of the URL. */
export function endpointHost(url: string): string {
  return new URL(url).host.toLowerCase();
}

/**
 * Records one event, its delivery to the launch's own webhook URL, and one delivery to each enabled
 * webhook endpoint of the launch's owner whose filter matches (SPEC §13).
 * Call it inside the transaction of the state change it reports (transactional outbox);
 * notify the dispatcher after that transaction commits.
 */
export async function recordEvent(trx: DbOrTx, clock: Clock, input: RecordEventInput): Promise<RecordedEvent> {
  const launch = await trx
    .updateTable('launches')
    .set((eb) => ({ next_sequence: eb('next_sequence', '+', 1) }))
    .where('id', '=', input.launchId)
    .returning(['next_sequence', 'webhook_url', 'owner'])
    .executeTakeFirstOrThrow();
  const sequence = launch.next_sequence - 1;
  const now = clock.now();
  const envelope: WebhookEnvelope = {
    id: newId('evt'),
    event: input.event,
    timestamp: new Date(now).toISOString(),
    launchId: input.launchId,
    sequence,
    data: input.data,
  };
  await trx
    .insertInto('outbox_events')
    .values({
      id: envelope.id,
      launch_id: input.launchId,
      sequence,
      event: input.event,
      body: JSON.stringify(envelope),
      request_id: input.requestId ?? null,
      created_at: now,
    })
    .execute();
  const deliveryId = await insertDelivery(trx, now, envelope.id, input.launchId, launch.webhook_url);
  for (const endpoint of await enabledEndpointsOf(trx, launch.owner)) {
    if (filterMatches(JSON.parse(endpoint.events) as string[], input.event)) {
      await insertDelivery(trx, now, envelope.id, input.launchId, endpoint.url, endpoint.id);
    }
  }
  return { eventId: envelope.id, sequence, deliveryId, envelope };
}

/**
 * Queues a delivery of a recorded event (first delivery, or a fresh series on redelivery) to the
 * launch's own URL, or to a webhook endpoint when `endpointId` is given.
 */
export async function insertDelivery(trx: DbOrTx, now: number, eventId: string, launchId: string, url: string, endpointId: string | null = null): Promise<string> {
  const id = newId('dlv');
  await trx
    .insertInto('deliveries')
    .values({
      id,
      event_id: eventId,
      launch_id: launchId,
      url,
      host: endpointHost(url),
      endpoint: endpointKey(url),
      status: 'pending',
      attempt_count: 0,
      next_attempt_at: now,
      lease_owner: null,
      lease_expires_at: null,
      last_error: null,
      last_status_code: null,
      created_at: now,
      updated_at: now,
      completed_at: null,
      endpoint_id: endpointId,
    })
    .execute();
  return id;
}
