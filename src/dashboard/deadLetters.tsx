import type { FC } from 'hono/jsx';
import type { Db } from '../db/database.js';
import type { DeadLetterRow } from '../db/schema.js';
import { Badge, FilterSelect, Csrf, Pager, time } from './layout.js';
import { PAGE } from './launches.js';
import type { DashboardUser } from './session.js';

export const DEAD_LETTER_KINDS: DeadLetterRow['kind'][] = ['launch', 'delivery', 'watch'];
export const DEAD_LETTER_STATUSES: DeadLetterRow['status'][] = ['open', 'retried', 'resolved'];

export interface DeadLetterFilter {
  kind?: DeadLetterRow['kind'];
  status?: DeadLetterRow['status'];
  offset: number;
}

/**
 * Newest dead letters first, one page (admin only). A status without a kind reads each kind through
 * the (status, kind, created_at) index and merges, so no filter ever sorts the whole table.
 */
export async function listDeadLettersPage(db: Db, filter: DeadLetterFilter): Promise<DeadLetterRow[]> {
  const page = (kind: DeadLetterRow['kind'] | undefined, limit: number, offset: number) => {
    let q = db.selectFrom('dead_letters').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset);
    if (filter.status) q = q.where('status', '=', filter.status);
    if (kind) q = q.where('kind', '=', kind);
    return q.execute();
  };
  if (!filter.status || filter.kind) return page(filter.kind, PAGE, filter.offset);
  const both = (await Promise.all(DEAD_LETTER_KINDS.map((kind) => page(kind, filter.offset + PAGE, 0)))).flat();
  return both.sort((a, b) => Number(b.created_at) - Number(a.created_at) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).slice(filter.offset, filter.offset + PAGE);
}

/** One form: tick dead letters and retry them together, or retry / resolve one with its own button. */
export const DeadLettersPage: FC<{ user: DashboardUser; rows: DeadLetterRow[]; filter: DeadLetterFilter }> = ({ user, rows, filter }) => {
  const query = [filter.kind ? `kind=${filter.kind}` : '', filter.status ? `status=${filter.status}` : ''].filter((p) => p !== '').join('&');
  const back = `/dashboard/dead-letters${query ? `?${query}` : ''}`;
  return (
    <>
      <h1>Dead letters</h1>
      <form class="filters" method="get" action="/dashboard/dead-letters">
        <FilterSelect label="Kind" name="kind" options={DEAD_LETTER_KINDS} selected={filter.kind} />
        <FilterSelect label="Status" name="status" options={DEAD_LETTER_STATUSES} selected={filter.status} />
        <button type="submit">Filter</button>
      </form>
      <form method="post" action="/dashboard/dead-letters/retry">
        <Csrf user={user} />
        <input type="hidden" name="back" value={back} />
        <div class="scroll">
          <table>
            <tr>
              <th></th>
              <th>Dead letter</th>
              <th>Kind</th>
              <th>Launch</th>
              <th>Error</th>
              <th>Status</th>
              <th>Created</th>
              <th></th>
            </tr>
            {rows.map((dl) => (
              <tr data-dead-letter={dl.id}>
                <td>{dl.status === 'open' && <input type="checkbox" name="ids" value={dl.id} aria-label={`select ${dl.id}`} />}</td>
                <td class="mono">{dl.id}</td>
                <td>
                  {dl.kind}
                  {dl.step ? <div class="muted">{dl.step}</div> : ''}
                </td>
                <td class="mono">
                  <a href={`/dashboard/launches/${dl.launch_id}`}>{dl.launch_id}</a>
                </td>
                <td>
                  <strong>{dl.error_code}</strong>
                  <div class="muted">{dl.error_message}</div>
                </td>
                <td>
                  <Badge value={dl.status} /> {dl.retry_count > 0 ? <span class="muted">×{dl.retry_count}</span> : ''}
                </td>
                <td>{time(dl.created_at)}</td>
                <td>
                  {dl.status === 'open' && (
                    <>
                      <button type="submit" formaction={`/dashboard/dead-letters/${dl.id}/retry`}>
                        Retry
                      </button>{' '}
                    </>
                  )}
                  {dl.status !== 'resolved' && (
                    <button type="submit" formaction={`/dashboard/dead-letters/${dl.id}/resolve`}>
                      Resolve
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </table>
        </div>
        <p>
          <button type="submit">Retry selected</button>
        </p>
      </form>
      <Pager base="/dashboard/dead-letters" params={{ kind: filter.kind, status: filter.status }} offset={filter.offset} limit={PAGE} shown={rows.length} />
    </>
  );
};
