import { sql } from 'kysely';
import type { FC } from 'hono/jsx';
import type { Db } from '../db/database.js';
import { jsonText } from '../db/dialect.js';
import type { LaunchStatus } from '../db/schema.js';
import { Badge, FilterSelect, Pager, time } from './layout.js';
import type { DashboardUser } from './session.js';

export const LAUNCH_STATUSES: LaunchStatus[] = ['awaiting_signatures', 'queued', 'processing', 'complete', 'failed'];
export const PAGE = 50;

export interface LaunchFilter {
  status?: LaunchStatus;
  owner?: string;
  offset: number;
}

export interface LaunchListRow {
  id: string;
  owner: string;
  status: LaunchStatus;
  name: string | null;
  ticker: string | null;
  created_at: number;
  completed_at: number | null;
}

/** Newest launches first, one page, through the (owner,) (status,) created_at indexes. */
export async function listLaunchesPage(db: Db, user: DashboardUser, filter: LaunchFilter): Promise<LaunchListRow[]> {
  let q = db
    .selectFrom('launches')
    .select(['id', 'owner', 'status', 'created_at', 'completed_at', jsonText(db, sql`request`, ['name']).as('name'), jsonText(db, sql`request`, ['ticker']).as('ticker')])
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc') // a unique tiebreaker: launches of one created_at keep one order across pages
    .limit(PAGE)
    .offset(filter.offset);
  const owner = user.isAdmin ? filter.owner : user.owner;
  if (owner) q = q.where('owner', '=', owner);
  if (filter.status) q = q.where('status', '=', filter.status);
  return q.execute();
}

export const LaunchesPage: FC<{ user: DashboardUser; rows: LaunchListRow[]; filter: LaunchFilter }> = ({ user, rows, filter }) => (
  <>
    <h1>Launches</h1>
    <form class="filters" method="get" action="/dashboard/launches">
      <FilterSelect label="Status" name="status" options={LAUNCH_STATUSES} selected={filter.status} />
      {user.isAdmin && (
        <label>
          Owner
          <input name="owner" value={filter.owner ?? ''} size={12} />
        </label>
      )}
      <button type="submit">Filter</button>
    </form>
    <div class="scroll">
      <table>
        <tr>
          <th>Launch</th>
          <th>Token</th>
          <th>Status</th>
          {user.isAdmin && <th>Owner</th>}
          <th>Created</th>
          <th>Completed</th>
        </tr>
        {rows.map((l) => (
          <tr>
            <td class="mono">
              <a href={`/dashboard/launches/${l.id}`}>{l.id}</a>
            </td>
            <td>
              {l.name ?? ''} {l.ticker ? <span class="muted">({l.ticker})</span> : ''}
            </td>
            <td>
              <Badge value={l.status} />
            </td>
            {user.isAdmin && <td>{l.owner}</td>}
            <td>{time(l.created_at)}</td>
            <td>{time(l.completed_at)}</td>
          </tr>
        ))}
      </table>
    </div>
    <Pager base="/dashboard/launches" params={{ status: filter.status, owner: filter.owner }} offset={filter.offset} limit={PAGE} shown={rows.length} />
  </>
);
