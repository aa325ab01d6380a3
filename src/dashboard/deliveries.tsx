import { sql } from 'kysely';
import type { FC } from 'hono/jsx';
import type { Db } from '../db/database.js';
import { withoutIndex } from '../db/dialect.js';
import type { DeliveryStatus } from '../db/schema.js';
import type { AttemptRow } from '../webhooks/sql/attempts.js';
import { DeliveryTable, type DeliveryListRow } from './deliveryTable.js';
import { FilterSelect, Pager } from './layout.js';
import { PAGE } from './launches.js';
import { ownLaunchIds } from './scope.js';
import type { DashboardUser } from './session.js';

/** Every state a delivery can be in; `waiting` is a pending delivery whose endpoint's breaker is open. */
export const DELIVERY_FILTERS = ['pending', 'waiting', 'paused', 'failed', 'delivered', 'canceled'] as const;
export type DeliveryFilterStatus = DeliveryStatus | 'waiting';

const FILTER_LABELS: Record<string, string> = {
  pending: 'pending (due or retrying)',
  waiting: 'waiting behind an open breaker',
  paused: 'paused (endpoint disabled)',
  failed: 'failed (attempts used up)',
  delivered: 'delivered',
  canceled: 'canceled (endpoint removed)',
};

export interface DeliveryFilter {
  status?: DeliveryFilterStatus;
  offset: number;
}

/**
 * Newest deliveries first, one page, through the (status,) created_at indexes. The status index
 * leaves delivered rows out (migration 018), and SQLite uses a partial index only when the query
 * states its condition, so a filter on any other status says it too; delivered rows are found by
 * walking `deliveries_created` newest first (not through another status index, which would sort
 * every delivered row to show one page).
 */
export async function listDeliveriesPage(db: Db, user: DashboardUser, filter: DeliveryFilter, openEndpoints: ReadonlySet<string>): Promise<DeliveryListRow[]> {
  if (filter.status === 'waiting' && openEndpoints.size === 0) return [];
  let q = db
    .selectFrom('deliveries as d')
    .innerJoin('outbox_events as e', 'e.id', 'd.event_id')
    .select(['d.id', 'd.launch_id', 'e.event', 'e.sequence', 'd.url', 'd.endpoint', 'd.status', 'd.attempt_count', 'd.next_attempt_at', 'd.last_error', 'd.created_at'])
    .orderBy('d.created_at', 'desc')
    .orderBy('d.id', 'desc')
    .limit(PAGE)
    .offset(filter.offset);
  if (filter.status === 'delivered') q = q.where(withoutIndex(db, 'd.status'), '=', filter.status);
  else if (filter.status === 'waiting') q = q.where('d.status', '=', 'pending').where(sql<boolean>`d.status <> 'delivered'`).where('d.endpoint', 'in', [...openEndpoints]);
  else if (filter.status) q = q.where('d.status', '=', filter.status).where(sql<boolean>`d.status <> 'delivered'`);
  const own = ownLaunchIds(user);
  if (own) q = q.where('d.launch_id', 'in', own);
  return q.execute();
}

export const DeliveriesPage: FC<{ user: DashboardUser; rows: DeliveryListRow[]; attempts: Map<string, AttemptRow[]>; filter: DeliveryFilter; openEndpoints: ReadonlySet<string> }> = ({
  user,
  rows,
  attempts,
  filter,
  openEndpoints,
}) => (
  <>
    <h1>Deliveries</h1>
    <form class="filters" method="get" action="/dashboard/deliveries">
      <FilterSelect label="Status" name="status" options={DELIVERY_FILTERS} selected={filter.status} labels={FILTER_LABELS} />
      <button type="submit">Filter</button>
    </form>
    <p class="muted">
      {'Show: '}
      {DELIVERY_FILTERS.map((s, i) => (
        <>
          {i > 0 && ' · '}
          {filter.status === s ? <strong>{s}</strong> : <a href={`/dashboard/deliveries?status=${s}`}>{s}</a>}
        </>
      ))}
    </p>
    {rows.length === 0 ? (
      <p class="muted">{filter.status ? `No ${FILTER_LABELS[filter.status] ?? filter.status} deliveries.` : 'No deliveries yet.'}</p>
    ) : (
      <DeliveryTable user={user} rows={rows} attempts={attempts} openEndpoints={openEndpoints} showLaunch back={`/dashboard/deliveries${filter.status ? `?status=${filter.status}` : ''}`} />
    )}
    <Pager base="/dashboard/deliveries" params={{ status: filter.status }} offset={filter.offset} limit={PAGE} shown={rows.length} />
  </>
);
