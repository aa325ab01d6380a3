import type { DbOrTx } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import { newSortableId } from '../lib/ids.js';
import { currentTraceparent } from '../lib/tracing.js';
import { filterMatches } from './endpoints/filters.js';
import type { DeliveryOffer } from './sql/claimWork.js';
import { handoffContext, type HandoffSecrets, type WrittenEvent } from './dispatch/deliveryContext.js';
import {
  deliveryRow,
  endpointsStatement,
  insertDeliveriesStatement,
  insertEventsStatement,
  insertRows,
  nextSequenceStatement,
  nextStreamSequenceStatement,
  type NewDelivery,
} from './sql/outboxRows.js';

/** The webhook envelope (docs/events.md). Its serialized form is the body of every attempt. */
export interface WebhookEnvelope<T = unknown> {
  id: string;
  event: string;
  timestamp: string;
  /** The launch the event belongs to; null for an owner's own events (the funding events). */
  launchId: string | null;
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

/**
 * Deliveries a transaction inserted, with everything their first attempt needs, to hand to this
 * process's dispatcher once the transaction has committed (see OutboxSignal.notify). `complete` is
 * false when the transaction inserted a delivery it could not describe: the dispatcher then claims
 * from the table as usual.
 */
export interface DeliveryHandoff {
  offers: DeliveryOffer[];
  complete: boolean;
}

export function newHandoff(): DeliveryHandoff {
  return { offers: [], complete: true };
}

/** Lets the dispatcher wake at once when an event has committed. */
export interface OutboxSignal {
  /**
   * Called after a commit that added deliveries (or changed what can be claimed). With the
   * transaction's `handoff`, the dispatcher may lease those deliveries by id instead of searching
   * the table for them.
   */
  notify(handoff?: DeliveryHandoff): void;
}

export const noopSignal: OutboxSignal = { notify: () => undefined };

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
  /** The launch's sealed webhook secret, when the caller read it: its deliveries can then be handed off. */
  webhookSecretSealed?: string;
}

/**
 * Records one event, its delivery to the launch's own webhook URL, and one delivery to each enabled
 * webhook endpoint of the launch's owner whose filter matches (docs/webhooks.md).
 * Call it inside the transaction of the state change it reports (transactional outbox);
 * notify the dispatcher after that transaction commits.
 */
export async function recordEvent(trx: DbOrTx, clock: Clock, input: RecordEventInput, handoff?: DeliveryHandoff): Promise<RecordedEvent> {
  const owner = streamOwner(input.launchId);
  if (owner !== undefined) return recordOwnerEvent(trx, clock, { owner, event: input.event, data: input.data, requestId: input.requestId ?? null });
  const launch = await nextSequenceStatement.first(trx, { id: input.launchId });
  if (!launch) throw new Error(`recordEvent: no launch ${input.launchId}`);
  const target = { launchId: input.launchId, webhookUrl: launch.webhook_url, owner: launch.owner, firstSequence: launch.next_sequence - 1, webhookSecretSealed: launch.webhook_secret_enc };
  const [recorded] = await insertEvents(trx, clock, target, [input], handoff);
  return recorded!;
}

/**
 * The outbox key of an owner's own events, those of no launch (the funding events): they are stored
 * under it in `launch_id` (outbox, deliveries, dead letters, watches) with their own sequence. Launch
 * ids start with `lch_`, so no launch has such a key.
 */
export function ownerStreamKey(owner: string): string {
  return `${OWNER_STREAM}${owner}`;
}

const OWNER_STREAM = 'own_';

/** The owner whose own events `key` holds, or undefined when it is a launch id. */
export function streamOwner(key: string): string | undefined {
  return key.startsWith(OWNER_STREAM) ? key.slice(OWNER_STREAM.length) : undefined;
}

/**
 * Records an event of the owner that belongs to no launch (docs/events.md, "Funding"): `launchId` is
 * null in its envelope, its sequence counts the owner's own events (`event_streams`), and it is
 * delivered to every enabled webhook endpoint of the owner whose filter matches (there is no launch
 * URL). Call it inside the transaction of the change it reports; notify the dispatcher after the commit.
 */
export async function recordOwnerEvent(trx: DbOrTx, clock: Clock, input: EventToRecord & { owner: string }): Promise<RecordedEvent> {
  const key = ownerStreamKey(input.owner);
  const stream = await nextStreamSequenceStatement.first(trx, { key });
  if (!stream) throw new Error(`recordOwnerEvent: no sequence for ${key}`);
  const now = clock.now();
  const envelope: WebhookEnvelope = { id: newSortableId('evt', now), event: input.event, timestamp: new Date(now).toISOString(), launchId: null, sequence: Number(stream.next_sequence) - 1, data: input.data };
  await insertRows(trx, insertEventsStatement, [
    { id: envelope.id, launch_id: key, sequence: envelope.sequence, event: envelope.event, body: JSON.stringify(envelope), request_id: input.requestId ?? null, created_at: now, trace_parent: currentTraceparent() },
  ]);
  const endpoints = await endpointsStatement.rows(trx, { owner: input.owner });
  const rows = endpoints
    .filter((endpoint) => filterMatches(JSON.parse(endpoint.events) as string[], envelope.event))
    .map((endpoint) => deliveryRow(newSortableId('dlv', now), now, envelope.id, key, input.owner, endpoint.url, endpoint.id));
  await insertRows(trx, insertDeliveriesStatement, rows);
  return { eventId: envelope.id, sequence: envelope.sequence, deliveryId: rows[0]?.id ?? '', envelope };
}

/**
 * Records several events of one launch in order, with sequence numbers from `target.firstSequence`
 * on, which the caller has reserved in the same transaction (`next_sequence` raised by
 * `events.length`, usually in the statement that writes the state change the events report): the
 * events in one statement, their deliveries (the launch's URL and every matching endpoint) in
 * another, the owner's endpoints read once.
 */
export async function insertEvents(trx: DbOrTx, clock: Clock, target: EventTarget, events: readonly EventToRecord[], handoff?: DeliveryHandoff): Promise<RecordedEvent[]> {
  if (events.length === 0) return [];
  const now = clock.now();
  const timestamp = new Date(now).toISOString();
  const recorded = events.map((input, i): RecordedEvent => {
    const envelope: WebhookEnvelope = { id: newSortableId('evt', now), event: input.event, timestamp, launchId: target.launchId, sequence: target.firstSequence + i, data: input.data };
    return { eventId: envelope.id, sequence: envelope.sequence, deliveryId: newSortableId('dlv', now), envelope };
  });
  const traceParent = currentTraceparent();
  const eventRows = recorded.map(({ envelope }, i) => ({
    id: envelope.id,
    launch_id: target.launchId,
    sequence: envelope.sequence,
    event: envelope.event,
    body: JSON.stringify(envelope),
    request_id: events[i]!.requestId ?? null,
    created_at: now,
    trace_parent: traceParent,
  }));
  await insertRows(trx, insertEventsStatement, eventRows);
  const endpoints = (await endpointsStatement.rows(trx, { owner: target.owner })).map((e) => ({ ...e, events: JSON.parse(e.events) as string[] }));
  const rows: NewDelivery[] = [];
  recorded.forEach(({ envelope, deliveryId }, i) => {
    const eventRow = eventRows[i]!;
    const written: WrittenEvent = { launchId: target.launchId, owner: target.owner, eventId: envelope.id, event: envelope.event, sequence: envelope.sequence, body: eventRow.body, requestId: eventRow.request_id, traceParent };
    /** Hands the delivery over with its context, made from the rows just written as the claim makes it from the table's. */
    const offer = (row: NewDelivery, secrets: HandoffSecrets): void => {
      const ctx = handoffContext(row.id, row.endpoint_id ?? null, written, secrets);
      if (ctx) handoff?.offers.push({ id: row.id, launchId: target.launchId, eventId: envelope.id, url: row.url, host: row.host, endpoint: row.endpoint, ctx });
    };
    const own = deliveryRow(deliveryId, now, envelope.id, target.launchId, target.owner, target.webhookUrl, null);
    rows.push(own);
    if (target.webhookSecretSealed === undefined) {
      if (handoff) handoff.complete = false;
    } else {
      offer(own, { webhook_secret_enc: target.webhookSecretSealed, secret_enc: null, signature_scheme: null, previous_secret_enc: null, previous_secret_expires_at: null });
    }
    for (const endpoint of endpoints) {
      if (!filterMatches(endpoint.events, envelope.event)) continue;
      const row = deliveryRow(newSortableId('dlv', now), now, envelope.id, target.launchId, target.owner, endpoint.url, endpoint.id);
      rows.push(row);
      // A throttled endpoint's delivery waits for its slot, an ordered one for the launch's earlier
      // events: the dispatcher's ordinary claim takes them.
      if (endpoint.rate_limit_per_second !== null || endpoint.ordering !== null) {
        if (handoff) handoff.complete = false;
        continue;
      }
      offer(row, { webhook_secret_enc: null, secret_enc: endpoint.secret_enc, signature_scheme: endpoint.signature_scheme, previous_secret_enc: endpoint.previous_secret_enc, previous_secret_expires_at: endpoint.previous_secret_expires_at });
    }
  });
  await insertRows(trx, insertDeliveriesStatement, rows);
  return recorded;
}

/**
 * Queues a delivery of a recorded event (first delivery, or a fresh series on redelivery) to the
 * launch's own URL, or to a webhook endpoint when `endpointId` is given.
 */
export async function insertDelivery(trx: DbOrTx, now: number, eventId: string, launchId: string, url: string, endpointId: string | null = null): Promise<string> {
  const id = newSortableId('dlv', now);
  let owner = streamOwner(launchId);
  if (owner === undefined) {
    const launch = await trx.selectFrom('launches').select('owner').where('id', '=', launchId).executeTakeFirst();
    if (!launch) throw new Error(`insertDelivery: no launch ${launchId}`);
    owner = launch.owner;
  }
  await trx.insertInto('deliveries').values(deliveryRow(id, now, eventId, launchId, owner, url, endpointId)).execute();
  return id;
}
