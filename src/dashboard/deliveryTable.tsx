import type { FC } from 'hono/jsx';
import type { Db } from '../db/database.js';
import type { AttemptRow } from '../webhooks/sql/attempts.js';
import { listAttempts } from '../webhooks/sql/attempts.js';
import { streamOwner } from '../webhooks/outbox.js';
import { displayUrl } from '../webhooks/present.js';
import { Badge, Csrf, duration, time } from './layout.js';
import type { DashboardUser } from './session.js';

export interface DeliveryListRow {
  id: string;
  launch_id: string;
  event: string;
  sequence: number;
  url: string;
  /** The breaker key (scheme, host, port and path). */
  endpoint: string;
  status: string;
  attempt_count: number;
  next_attempt_at: number;
  last_error: string | null;
  created_at: number;
}

/** Error classes of the attempt log in words. */
const ERROR_WORDS: Record<string, string> = {
  timeout: 'timed out',
  http_status: 'answered with a non-2xx status',
  http_error: 'answered with a non-2xx status',
  redirect: 'answered with a redirect (not followed)',
  connection_refused: 'connection refused',
  connection_error: 'connection failed',
  dns_error: 'host name did not resolve',
  tls_error: 'TLS handshake failed',
  blocked_destination: 'address refused by the outbound guard',
  secret_unavailable: 'webhook secret could not be decrypted',
};
export const errorInWords = (errorClass: string | null) => (errorClass === null ? '' : (ERROR_WORDS[errorClass] ?? errorClass.replace(/_/g, ' ')));

/** Attempts of the shown deliveries, grouped by delivery. */
export async function attemptsByDelivery(db: Db, ids: string[]): Promise<Map<string, AttemptRow[]>> {
  const map = new Map<string, AttemptRow[]>();
  for (const a of await listAttempts(db, ids)) map.set(a.delivery_id, [...(map.get(a.delivery_id) ?? []), a]);
  return map;
}

/** An attempt in one line: outcome and status code, when, how long, and the error in words. */
const AttemptLine: FC<{ a: AttemptRow }> = ({ a }) => (
  <>
    <Badge value={a.outcome} /> {a.status_code ?? ''} <span class="muted">{`#${a.attempt} · ${time(a.started_at)} · ${duration(a.duration_ms)}`}</span>
    {a.error_class && <div>{errorInWords(a.error_class)}</div>}
  </>
);

/** Every attempt, oldest first, in a table. */
const AttemptHistory: FC<{ attempts: AttemptRow[] }> = ({ attempts }) => (
  <table>
    <tr>
      <th>#</th>
      <th>Time</th>
      <th>Status</th>
      <th>Duration</th>
      <th>Error</th>
      <th>Response</th>
    </tr>
    {attempts.map((a) => (
      <tr data-attempt={a.outcome}>
        <td>{a.attempt}</td>
        <td>{time(a.started_at)}</td>
        <td>
          <Badge value={a.outcome} /> {a.status_code ?? ''}
        </td>
        <td>{duration(a.duration_ms)}</td>
        <td>
          {errorInWords(a.error_class)}
          {a.error_message ? <div class="muted mono">{a.error_message}</div> : ''}
        </td>
        <td class="mono">{(a.response_body ?? '').slice(0, 200)}</td>
      </tr>
    ))}
  </table>
);

/** Where a delivery stands, in words: a pending one behind an open breaker says so and links to it. */
const DeliveryState: FC<{ d: DeliveryListRow; openEndpoints: ReadonlySet<string>; isAdmin: boolean }> = ({ d, openEndpoints, isAdmin }) => {
  if (d.status === 'failed') return <strong class="badge failed">failed</strong>;
  if (d.status === 'pending' && openEndpoints.has(d.endpoint)) {
    return (
      <>
        <span class="badge blocked">waiting</span>
        <div>{isAdmin ? <a href={`/dashboard/breakers#${encodeURIComponent(d.endpoint)}`}>breaker open</a> : 'breaker open'}</div>
      </>
    );
  }
  return (
    <>
      <Badge value={d.status} />
      {d.status === 'pending' && d.attempt_count > 0 && <div class="muted">next {time(d.next_attempt_at)}</div>}
      {d.status === 'paused' && <div class="muted">endpoint disabled</div>}
    </>
  );
};

/**
 * One row per delivery: where it stands, its latest attempt, and every attempt behind a
 * <details>; failed ones marked **failed**, pending ones behind an open breaker marked waiting.
 * `history` adds the attempts of earlier deliveries of the same event (redeliveries) to a row.
 */
export const DeliveryTable: FC<{
  user: DashboardUser;
  rows: DeliveryListRow[];
  attempts: Map<string, AttemptRow[]>;
  openEndpoints: ReadonlySet<string>;
  showLaunch: boolean;
  /** False when every row goes to one URL the page shows once. */
  showEndpoint?: boolean;
  back: string;
  history?: Map<string, DeliveryListRow[]>;
}> = ({ user, rows, attempts, openEndpoints, showLaunch, showEndpoint = true, back, history }) => (
  <div class="scroll">
    <table class="deliveries">
      <tr>
        <th>Event</th>
        {showLaunch && <th>Launch</th>}
        {showEndpoint && <th>Endpoint</th>}
        <th>Status</th>
        <th>Latest attempt</th>
        <th></th>
      </tr>
      {rows.map((d) => {
        const earlier = history?.get(d.id) ?? [];
        const all = [...earlier.flatMap((e) => attempts.get(e.id) ?? []), ...(attempts.get(d.id) ?? [])];
        const latest = all.at(-1);
        return (
          <tr data-delivery={d.id} data-status={d.status} class={d.status === 'failed' || openEndpoints.has(d.endpoint) ? 'hot' : ''}>
            <td title={`recorded ${time(d.created_at)}`}>
              #{d.sequence} {d.event}
            </td>
            {showLaunch && (
              <td class="mono">
                {streamOwner(d.launch_id) === undefined ? <a href={`/dashboard/launches/${d.launch_id}`}>{d.launch_id}</a> : <span class="muted">owner event</span>}
              </td>
            )}
            {showEndpoint && <td class="mono">{displayUrl(d.url)}</td>}
            <td>
              <DeliveryState d={d} openEndpoints={openEndpoints} isAdmin={user.isAdmin} />
            </td>
            <td class="latest">
              {latest ? <AttemptLine a={latest} /> : <span class="muted">no attempt yet</span>}
              {all.length > 0 && (
                <details>
                  <summary>{`history: ${all.length} attempt${all.length === 1 ? '' : 's'}${earlier.length > 0 ? `, ${earlier.length + 1} deliveries` : ''}`}</summary>
                  <AttemptHistory attempts={all} />
                </details>
              )}
            </td>
            <td>
              {(user.isAdmin || user.scopes.includes('launches:write')) && (
                <form class="inline" method="post" action={`/dashboard/deliveries/${d.id}/redeliver`}>
                  <Csrf user={user} />
                  <input type="hidden" name="back" value={back} />
                  <button type="submit">Redeliver</button>
                </form>
              )}
            </td>
          </tr>
        );
      })}
    </table>
  </div>
);

/** The endpoints whose breaker is open now (a delivery to one waits). */
export const openBreakerEndpoints = (breakers: ReadonlyArray<{ endpoint: string; state: string }>): Set<string> =>
  new Set(breakers.filter((b) => b.state === 'open').map((b) => b.endpoint));
