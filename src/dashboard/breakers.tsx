import type { FC } from 'hono/jsx';
import type { Db } from '../db/database.js';
import { Badge, Csrf, time } from './layout.js';
import type { DashboardUser } from './session.js';

export interface BreakerView {
  host: string;
  state: string;
  failures: number;
  openedAt: number | null;
  /** When an open breaker lets its one trial delivery through. */
  nextTrialAt: number | null;
}

/** Every known breaker: the persisted row for timings, the live registry for the state shown now. */
export async function listBreakers(db: Db, live: Record<string, { state: string; failures: number }>, resetTimeoutMs: number): Promise<BreakerView[]> {
  const rows = await db.selectFrom('breaker_states').select(['host', 'state', 'failures', 'opened_at']).orderBy('host').execute();
  const byHost = new Map(rows.map((r) => [r.host, r]));
  const hosts = [...new Set([...byHost.keys(), ...Object.keys(live)])].sort();
  return hosts.map((host) => {
    const row = byHost.get(host);
    const state = live[host]?.state ?? row?.state ?? 'closed';
    const openedAt = row?.opened_at ?? null;
    return {
      host,
      state,
      failures: live[host]?.failures ?? row?.failures ?? 0,
      openedAt,
      nextTrialAt: state === 'open' && openedAt !== null ? Number(openedAt) + resetTimeoutMs : null,
    };
  });
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
            <th>Endpoint host</th>
            <th>State</th>
            <th>Consecutive failures</th>
            <th>Opened</th>
            <th>Next trial</th>
            <th></th>
          </tr>
          {breakers.map((b) => (
            <tr data-breaker={b.host}>
              <td class="mono">{b.host}</td>
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
                    <input type="hidden" name="host" value={b.host} />
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
