/**
 * Ordered delivery (docs/webhooks.md, "Ordered delivery"): an endpoint with `ordering` 'launch'
 * receives one launch's events one at a time, in sequence order. A delivery `y` to such an endpoint
 * may be claimed only while no delivery of an earlier event (lower sequence) of the same launch to
 * the same endpoint is pending (due, waiting out a retry, or leased and in flight) or paused: the
 * next goes out once the previous was delivered or given up (failed, canceled). Other launches and
 * other endpoints are not held. SQL on both stores (SQLite's claim and every half-open trial);
 * PostgreSQL's claim function has the same condition (migration 041). The ordered endpoints come
 * from the partial index of migration 041; the earlier deliveries of the launch from the
 * `deliveries_launch` index.
 */
export const ORDERED_CONDITION = `(y.endpoint_id is null
        or y.endpoint_id not in (select w.id from webhook_endpoints w where w.ordering is not null)
        or not exists (select 1 from deliveries p join outbox_events pe on pe.id = p.event_id
          where p.launch_id = y.launch_id and p.endpoint_id = y.endpoint_id and p.status in ('pending', 'paused')
            and pe.sequence < (select ye.sequence from outbox_events ye where ye.id = y.event_id)))`;

/** The ways an endpoint may order its deliveries: `launch` (each launch's events in sequence, one at a time). */
export const ORDERINGS = ['launch'] as const;
export type Ordering = (typeof ORDERINGS)[number];
