/** What an attempt needs beyond the delivery row: the stored body, the event and the sealed secret(s). */
export interface DeliveryContext {
  deliveryId: string;
  launchId: string;
  owner: string;
  eventId: string;
  event: string;
  /** The event's number within its launch (ties on due and creation time are sent in this order). */
  sequence: number;
  body: string;
  requestId: string | null;
  /** The launch's secret, or the endpoint's current one for an endpoint delivery. */
  secretSealed: string;
  /** An endpoint delivery: the webhook endpoint, its scheme and its previous secret during a rotation. */
  endpointId: string | null;
  scheme: 'service' | 'standard';
  previousSecretSealed: string | null;
  previousSecretExpiresAt: number | null;
  /** The endpoint's throttle (docs/webhooks.md, "Throttle"): at most this many deliveries a second; null: none. */
  rateLimitPerSecond: number | null;
  /**
   * Its endpoint orders each launch's events (sql/ordering.ts): settling it may free the launch's
   * next. Known on SQLite; PostgreSQL's claim function does not return it (its dispatcher claims on
   * every turn anyway).
   */
  ordered: boolean;
  /**
   * The traceparent of the span that recorded the event (outbox_events.trace_parent), when known: a
   * handed-over delivery carries it; a claimed one leaves it undefined and the dispatcher reads it
   * only while tracing is on.
   */
  traceParent?: string | null;
}

/**
 * The columns a delivery's context is made of, as every source has them: the claim's read
 * (sql/deliveryQueries.ts), PostgreSQL's claim function (sql/claimWork.ts) and the outbox's
 * handoff at commit (outbox.ts), which fills them from the rows it has just written.
 */
export interface ContextRow {
  id: string;
  launch_id: string;
  endpoint_id: string | null;
  /** Null only for a launch delivery whose launch is gone. */
  owner: string | null;
  event_id: string;
  event: string;
  sequence: number;
  body: string;
  request_id: string | null;
  webhook_secret_enc: string | null;
  secret_enc: string | null;
  signature_scheme: 'service' | 'standard' | null;
  previous_secret_enc: string | null;
  previous_secret_expires_at: number | null;
  rate_limit_per_second: number | null;
  /** Known to SQLite's context read and the handoff only (see DeliveryContext.ordered). */
  ordering?: string | null;
  /** Known to the handoff only (see DeliveryContext.traceParent). */
  trace_parent?: string | null;
}

/**
 * What an attempt of the row's delivery needs, the one place a {@link DeliveryContext} is made;
 * undefined for a delivery of a launch that is gone (nothing to sign with: left leased, failed once
 * its attempts are spent).
 */
export function contextOf(row: ContextRow): DeliveryContext | undefined {
  if (row.owner === null) return undefined;
  const endpoint = row.endpoint_id !== null && row.secret_enc !== null;
  const ctx: DeliveryContext = {
    deliveryId: row.id,
    launchId: row.launch_id,
    owner: row.owner,
    eventId: row.event_id,
    event: row.event,
    sequence: Number(row.sequence),
    body: row.body,
    requestId: row.request_id,
    // A deleted endpoint's delivery has no secret to sign with (the attempt fails as secret_unavailable).
    secretSealed: row.endpoint_id === null ? (row.webhook_secret_enc ?? '') : (row.secret_enc ?? ''),
    endpointId: endpoint ? row.endpoint_id : null,
    scheme: endpoint ? (row.signature_scheme ?? 'service') : 'service',
    previousSecretSealed: endpoint ? row.previous_secret_enc : null,
    previousSecretExpiresAt: endpoint && row.previous_secret_expires_at !== null ? Number(row.previous_secret_expires_at) : null,
    rateLimitPerSecond: endpoint && row.rate_limit_per_second !== null && row.rate_limit_per_second !== undefined ? Number(row.rate_limit_per_second) : null,
    ordered: endpoint && row.ordering !== null && row.ordering !== undefined,
  };
  if (row.trace_parent !== undefined && row.trace_parent !== null) ctx.traceParent = row.trace_parent;
  return ctx;
}

/** An event as the outbox has just written it, for the context of a delivery handed off at commit. */
export interface WrittenEvent {
  launchId: string;
  owner: string;
  eventId: string;
  event: string;
  sequence: number;
  body: string;
  requestId: string | null;
  traceParent: string | null;
}

/** The sealed secret(s) a handed-off delivery is signed with: the launch's, or its endpoint's. */
export type HandoffSecrets = Pick<ContextRow, 'webhook_secret_enc' | 'secret_enc' | 'signature_scheme' | 'previous_secret_enc' | 'previous_secret_expires_at'>;

/**
 * The context of a delivery the outbox has just inserted (outbox.ts, handed to this process's
 * dispatcher at commit), made by {@link contextOf} from the rows written as the claim makes it from
 * the table's. Throttled and ordered endpoints' deliveries are never handed off, so neither is set.
 */
export function handoffContext(deliveryId: string, endpointId: string | null, event: WrittenEvent, secrets: HandoffSecrets): DeliveryContext | undefined {
  return contextOf({
    id: deliveryId,
    launch_id: event.launchId,
    endpoint_id: endpointId,
    owner: event.owner,
    event_id: event.eventId,
    event: event.event,
    sequence: event.sequence,
    body: event.body,
    request_id: event.requestId,
    rate_limit_per_second: null,
    ordering: null,
    trace_parent: event.traceParent,
    ...secrets,
  });
}
