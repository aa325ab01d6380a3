import type { FC } from 'hono/jsx';
import type { Db } from '../db/database.js';
import type { WebhookEndpointRow } from '../db/schema.js';
import { endpointStats } from '../webhooks/endpoints/stats.js';
import { findEndpoint, listEndpoints } from '../webhooks/endpoints/store.js';
import { displayUrl } from '../webhooks/present.js';
import { Badge, Csrf, time } from './layout.js';
import type { DashboardUser } from './session.js';

/** An owner's webhook endpoints (every owner's for an admin), newest first. */
export async function listEndpointsPage(db: Db, user: DashboardUser): Promise<WebhookEndpointRow[]> {
  return (await listEndpoints(db, user.isAdmin ? undefined : user.owner, { limit: 200, offset: 0 })).rows;
}

/** One endpoint the user may see, with its last 24 h. */
export async function loadEndpoint(db: Db, user: DashboardUser, id: string, now: number) {
  const endpoint = await findEndpoint(db, id, user.isAdmin ? undefined : user.owner);
  return endpoint ? { endpoint, stats: await endpointStats(db, endpoint.id, now) } : undefined;
}

const rate = (e: WebhookEndpointRow) => (e.rate_limit_per_second === null ? 'none' : `${e.rate_limit_per_second} / s`);
const ordering = (e: WebhookEndpointRow) => (e.ordering === null ? 'none' : `per ${e.ordering}`);
const state = (e: WebhookEndpointRow) => (e.disabled_at !== null ? 'disabled' : e.failing_since !== null ? 'failing' : 'enabled');

export const EndpointsPage: FC<{ rows: WebhookEndpointRow[]; user: DashboardUser }> = ({ rows, user }) => (
  <>
    <h1>Webhook endpoints</h1>
    {rows.length === 0 ? (
      <p class="muted">No webhook endpoint yet (POST /api/webhook-endpoints).</p>
    ) : (
      <div class="scroll">
        <table>
          <tr>
            <th>Endpoint</th>
            {user.isAdmin && <th>Owner</th>}
            <th>State</th>
            <th>Rate limit</th>
            <th>Ordering</th>
            <th>Created</th>
          </tr>
          {rows.map((e) => (
            <tr data-endpoint={e.id}>
              <td>
                <a href={`/dashboard/endpoints/${e.id}`} class="mono">
                  {displayUrl(e.url)}
                </a>
              </td>
              {user.isAdmin && <td>{e.owner}</td>}
              <td>
                <Badge value={state(e)} />
              </td>
              <td data-rate>{rate(e)}</td>
              <td data-ordering>{ordering(e)}</td>
              <td>{time(e.created_at)}</td>
            </tr>
          ))}
        </table>
      </div>
    )}
  </>
);

type EndpointDetail = NonNullable<Awaited<ReturnType<typeof loadEndpoint>>>;

/** One endpoint: its settings (rate limit, ordering), its last 24 h, and the recover form (docs/webhooks.md). */
export const EndpointPage: FC<{ detail: EndpointDetail; user: DashboardUser; now: number }> = ({ detail, user, now }) => {
  const e = detail.endpoint;
  const s = detail.stats;
  const canWrite = user.isAdmin || user.scopes.includes('launches:write');
  const since = new Date(now - 86_400_000).toISOString().slice(0, 16);
  return (
    <>
      <h1 class="mono">{displayUrl(e.url)}</h1>
      <table>
        <tr>
          <th>Id</th>
          <td class="mono">{e.id}</td>
        </tr>
        <tr>
          <th>State</th>
          <td>
            <Badge value={state(e)} /> {e.disabled_reason ?? ''}
          </td>
        </tr>
        <tr>
          <th>Events</th>
          <td class="mono">{(JSON.parse(e.events) as string[]).join(', ')}</td>
        </tr>
        <tr>
          <th>Rate limit</th>
          <td data-rate>{rate(e)}</td>
        </tr>
        <tr>
          <th>Ordering</th>
          <td data-ordering>{e.ordering === null ? 'none: events may arrive in any order' : "per launch: each launch's events one at a time, in sequence order"}</td>
        </tr>
        <tr>
          <th>Signature scheme</th>
          <td>{e.signature_scheme}</td>
        </tr>
        <tr>
          <th>Last 24 h</th>
          <td>
            {`${s.attempts} attempts, ${s.successRate === null ? 'no' : `${Math.round(s.successRate * 100)} %`} success; p50 ${s.latencyMs.p50 ?? '—'} ms, p99 ${s.latencyMs.p99 ?? '—'} ms`}
          </td>
        </tr>
      </table>
      <h2>Recover</h2>
      <p class="muted">
        Sends again every delivery to this endpoint that failed (its attempts spent) whose event was recorded in the window, unless the event reached the endpoint since: the same deliveries and event ids, a fresh attempt series each. Times are UTC.
      </p>
      {canWrite && e.disabled_at === null ? (
        <form method="post" action={`/dashboard/endpoints/${e.id}/recover`} data-recover>
          <Csrf user={user} />
          <label>
            Since <input type="datetime-local" name="since" value={since} required />
          </label>{' '}
          <label>
            Until <input type="datetime-local" name="until" />
          </label>{' '}
          <button type="submit">Recover</button>
        </form>
      ) : (
        <p class="muted">{e.disabled_at !== null ? 'Enable the endpoint first (PATCH {"disabled": false}).' : 'Recovering needs the launches:write scope.'}</p>
      )}
    </>
  );
};
