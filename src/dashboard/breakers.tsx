import type { FC } from 'hono/jsx';
import type { BreakerInfo } from '../webhooks/breakerRegistry.js';
import { Badge, Csrf, time } from './layout.js';
import type { DashboardUser } from './session.js';

export interface BreakerView {
  /** The endpoint (scheme, host, port, path) the breaker is kept for. */
  endpoint: string;
  host: string;
  state: string;
  failures: number;
  openedAt: number | null;
  /** When an open breaker lets its one trial delivery through. */
  nextTrialAt: number | null;
}

/** Every known endpoint breaker, by host then endpoint, as the registry shows it now. */
export function listBreakers(live: BreakerInfo[]): BreakerView[] {
  return [...live]
    .sort((a, b) => a.host.localeCompare(b.host) || a.endpoint.localeCompare(b.endpoint))
    .map((b) => ({ endpoint: b.endpoint, host: b.host, state: b.state, failures: b.failures, openedAt: b.openedAt, nextTrialAt: b.state === 'open' ? b.nextTrialAt : null }));
}

export const BreakersPage: FC<{ user: DashboardUser; breakers: BreakerView[] }> = ({ user, breakers }) => (
  <>
    <h1>Circuit breakers</h1>
    {breakers.length === 0 ? (
      <p class="muted">No endpoint has failed yet.</p>
    ) : (
      <div class="scroll">
        <table>
          <tr>
            <th>Endpoint</th>
            <th>State</th>
            <th>Consecutive failures</th>
            <th>Opened</th>
            <th>Next trial</th>
            <th></th>
          </tr>
          {breakers.map((b) => (
            <tr data-breaker={b.host} id={b.endpoint} class={b.state === 'closed' ? '' : 'hot'}>
              <td class="mono">{b.endpoint}</td>
              <td>
                <Badge value={b.state} />
              </td>
              <td>{b.failures}</td>
              <td>{b.state === 'closed' ? '—' : time(b.openedAt)}</td>
              <td>{b.state === 'open' ? time(b.nextTrialAt) : b.state === 'half-open' ? 'now' : '—'}</td>
              <td>
                {(b.state !== 'closed' || b.failures > 0) && (
                  <form class="inline" method="post" action="/dashboard/breakers/reset">
                    <Csrf user={user} />
                    <input type="hidden" name="host" value={b.endpoint} />
                    <button type="submit">Reset</button>
                  </form>
                )}
              </td>
            </tr>
          ))}
        </table>
      </div>
    )}
  </>
);
