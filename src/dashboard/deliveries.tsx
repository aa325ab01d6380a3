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

export const DELIVERY_STATUSES: DeliveryStatus[] = ['pending', 'delivered', 'failed', 'paused', 'canceled'];

export interface DeliveryFilter {
  status?: DeliveryStatus;
  offset: number;
}

/**
 * Newest deliveries first, one page, through the (status,) created_at indexes. The status index
 * leaves delivered rows out (migration 018), and SQLite uses a partial index only when the query
 * states its condition, so a filter on any other status says it too; delivered rows are found by
 * walking `deliveries_created` newest first (not through another status index, which would sort
 * every delivered row to show one page).
 */
export async function listDeliveriesPage(db: Db, user: DashboardUser, filter: DeliveryFilter): Promise<DeliveryListRow[]> {
  let q = db
    .selectFrom('deliveries as d')
    .innerJoin('outbox_events as e', 'e.id', 'd.event_id')
    .select(['d.id', 'd.launch_id', 'e.event', 'e.sequence', 'd.url', 'd.status', 'd.attempt_count', 'd.next_attempt_at', 'd.last_error', 'd.created_at'])
    .orderBy('d.created_at', 'desc')
    .limit(PAGE)
    .offset(filter.offset);
  if (filter.status === 'delivered') q = q.where(withoutIndex(db, 'd.status'), '=', filter.status);
  else if (filter.status) q = q.where('d.status', '=', filter.status).where(sql<boolean>`d.status <> 'delivered'`);
  const own = ownLaunchIds(user);
  if (own) q = q.where('d.launch_id', 'in', own);
  return q.execute();
}

export const DeliveriesPage: FC<{ user: DashboardUser; rows: DeliveryListRow[]; attempts: Map<string, AttemptRow[]>; filter: DeliveryFilter }> = ({ user, rows, attempts, filter }) => (
  <>
    <h1>Deliveries</h1>
    <form class="filters" method="get" action="/dashboard/deliveries">
      <FilterSelect label="Status" name="status" options={DELIVERY_STATUSES} selected={filter.status} />
      <button type="submit">Filter</button>
    </form>
    <DeliveryTable user={user} rows={rows} attempts={attempts} showLaunch back={`/dashboard/deliveries${filter.status ? `?status=${filter.status}` : ''}`} />
    <Pager base="/dashboard/deliveries" params={{ status: filter.status }} offset={filter.offset} limit={PAGE} shown={rows.length} />
  </>
);
