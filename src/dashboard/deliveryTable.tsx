import type { FC } from 'hono/jsx';
import type { Db } from '../db/database.js';
import type { AttemptRow } from '../webhooks/sql/attempts.js';
import { listAttempts } from '../webhooks/sql/attempts.js';
import { displayUrl } from '../webhooks/present.js';
import { Badge, Csrf, duration, time } from './layout.js';
import type { DashboardUser } from './session.js';

export interface DeliveryListRow {
  id: string;
  launch_id: string;
  event: string;
  sequence: number;
  url: string;
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

const Attempts: FC<{ attempts: AttemptRow[] }> = ({ attempts }) =>
  attempts.length === 0 ? (
    <span class="muted">no attempt yet</span>
  ) : (
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

/** Deliveries with every attempt; failed ones marked **failed**; a redeliver button each. */
export const DeliveryTable: FC<{ user: DashboardUser; rows: DeliveryListRow[]; attempts: Map<string, AttemptRow[]>; showLaunch: boolean; back: string }> = ({ user, rows, attempts, showLaunch, back }) => (
  <div class="scroll">
    <table>
      <tr>
        <th>Event</th>
        {showLaunch && <th>Launch</th>}
        <th>Endpoint</th>
        <th>Status</th>
        <th>Attempts</th>
        <th></th>
      </tr>
      {rows.map((d) => (
        <tr data-delivery={d.id} data-status={d.status}>
          <td>
            #{d.sequence} {d.event}
            <div class="muted">{time(d.created_at)}</div>
          </td>
          {showLaunch && (
            <td class="mono">
              <a href={`/dashboard/launches/${d.launch_id}`}>{d.launch_id}</a>
            </td>
          )}
          <td class="mono">{displayUrl(d.url)}</td>
          <td>
            {d.status === 'failed' ? (
              <strong class="badge failed">failed</strong>
            ) : (
              <Badge value={d.status} />
            )}
            {d.status === 'pending' && d.attempt_count > 0 && <div class="muted">next {time(d.next_attempt_at)}</div>}
          </td>
          <td>
            <Attempts attempts={attempts.get(d.id) ?? []} />
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
      ))}
    </table>
  </div>
);
