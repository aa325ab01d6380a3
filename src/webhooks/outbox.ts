import type { Insertable } from 'kysely';
import type { DbOrTx } from '../db/database.js';
import type { DeliveriesTable } from '../db/schema.js';
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

/** An event to record: its kind, payload and the API request that caused it. */
export interface EventToRecord {
  event: string;
  data: unknown;
  /** The id of the API request that caused the event, sent back as X-Request-ID. */
  requestId?: string | null;
}

/** The launch events are recorded for, with the first of the sequence numbers reserved for them. */
export interface EventTarget {
  launchId: string;
  webhookUrl: string;
  owner: string;
  firstSequence: number;
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
  const target = { launchId: input.launchId, webhookUrl: launch.webhook_url, owner: launch.owner, firstSequence: launch.next_sequence - 1 };
  const [recorded] = await insertEvents(trx, clock, target, [input]);
  return recorded!;
}

/**
 * Records several events of one launch in order, with sequence numbers from `target.firstSequence`
 * on, which the caller has reserved in the same transaction (`next_sequence` raised by
 * `events.length`, usually in the statement that writes the state change the events report): the
 * events in one statement, their deliveries (the launch's URL and every matching endpoint) in
 * another, the owner's endpoints read once.
 */
export async function insertEvents(trx: DbOrTx, clock: Clock, target: EventTarget, events: readonly EventToRecord[]): Promise<RecordedEvent[]> {
  if (events.length === 0) return [];
  const now = clock.now();
  const timestamp = new Date(now).toISOString();
  const recorded = events.map((input, i): RecordedEvent => {
    const envelope: WebhookEnvelope = { id: newId('evt'), event: input.event, timestamp, launchId: target.launchId, sequence: target.firstSequence + i, data: input.data };
    return { eventId: envelope.id, sequence: envelope.sequence, deliveryId: newId('dlv'), envelope };
  });
  await trx
    .insertInto('outbox_events')
    .values(
      recorded.map(({ envelope }, i) => ({
        id: envelope.id,
        launch_id: target.launchId,
        sequence: envelope.sequence,
        event: envelope.event,
        body: JSON.stringify(envelope),
        request_id: events[i]!.requestId ?? null,
        created_at: now,
      })),
    )
    .execute();
  const endpoints = (await enabledEndpointsOf(trx, target.owner)).map((e) => ({ ...e, events: JSON.parse(e.events) as string[] }));
  const rows: NewDelivery[] = [];
  for (const { envelope, deliveryId } of recorded) {
    rows.push(deliveryRow(deliveryId, now, envelope.id, target.launchId, target.webhookUrl, null));
    for (const endpoint of endpoints) {
      if (filterMatches(endpoint.events, envelope.event)) rows.push(deliveryRow(newId('dlv'), now, envelope.id, target.launchId, endpoint.url, endpoint.id));
    }
  }
  // Bounded statements: a launch's events times an owner's endpoints stay far below the parameter limits.
  for (let i = 0; i < rows.length; i += DELIVERY_ROWS_PER_INSERT) {
    await trx.insertInto('deliveries').values(rows.slice(i, i + DELIVERY_ROWS_PER_INSERT)).execute();
  }
  return recorded;
}

const DELIVERY_ROWS_PER_INSERT = 500;

type NewDelivery = Insertable<DeliveriesTable>;

/** A pending delivery row, due at once. */
function deliveryRow(id: string, now: number, eventId: string, launchId: string, url: string, endpointId: string | null): NewDelivery {
  return {
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
  };
}

/**
 * Queues a delivery of a recorded event (first delivery, or a fresh series on redelivery) to the
 * launch's own URL, or to a webhook endpoint when `endpointId` is given.
 */
export async function insertDelivery(trx: DbOrTx, now: number, eventId: string, launchId: string, url: string, endpointId: string | null = null): Promise<string> {
  const id = newId('dlv');
  await trx.insertInto('deliveries').values(deliveryRow(id, now, eventId, launchId, url, endpointId)).execute();
  return id;
}
