import { sql } from 'kysely';
import type { FC } from 'hono/jsx';
import type { Db } from '../db/database.js';
import type { LaunchRow, StepRow } from '../db/schema.js';
import { parseJson } from '../lib/json.js';
import type { AttemptRow } from '../webhooks/sql/attempts.js';
import { DeliveryTable, attemptsByDelivery, type DeliveryListRow } from './deliveryTable.js';
import { Badge, duration, time } from './layout.js';
import type { DashboardUser } from './session.js';

export interface LaunchDetail {
  launch: LaunchRow;
  steps: StepRow[];
  events: Array<{ id: string; sequence: number; event: string; body: string; created_at: number }>;
  deliveries: DeliveryListRow[];
  attempts: Map<string, AttemptRow[]>;
  watches: WatchRow[] | null;
}

interface WatchRow {
  kind: string;
  address: string;
  state: string;
  last_activity_at: number | null;
  next_check_at: number;
  ends_at: number;
  ended_reason: string | null;
}

/** The most deliveries and events the launch page shows (the API's deliveries and events lists page through all). */
export const LAUNCH_ROWS = 200;

/** A launch with its steps, event log, deliveries with attempts (the first {@link LAUNCH_ROWS} of each), and watches. */
export async function loadLaunch(db: Db, id: string): Promise<LaunchDetail | undefined> {
  const launch = await db.selectFrom('launches').selectAll().where('id', '=', id).executeTakeFirst();
  if (!launch) return undefined;
  const steps = await db.selectFrom('launch_steps').selectAll().where('launch_id', '=', id).orderBy('position').execute();
  const events = await db
    .selectFrom('outbox_events')
    .select(['id', 'sequence', 'event', 'body', 'created_at'])
    .where('launch_id', '=', id)
    .orderBy('sequence')
    .limit(LAUNCH_ROWS)
    .execute();
  const deliveries = await db
    .selectFrom('deliveries as d')
    .innerJoin('outbox_events as e', 'e.id', 'd.event_id')
    .select(['d.id', 'd.launch_id', 'e.event', 'e.sequence', 'd.url', 'd.status', 'd.attempt_count', 'd.next_attempt_at', 'd.last_error', 'd.created_at'])
    .where('d.launch_id', '=', id)
    .orderBy('e.sequence')
    .orderBy('d.created_at')
    .limit(LAUNCH_ROWS)
    .execute();
  // The watches table exists on every migrated database (migration 008).
  const watches = (await sql<WatchRow>`select kind, address, state, last_activity_at, next_check_at, ends_at, ended_reason from watches where launch_id = ${id} order by created_at`.execute(db)).rows;
  return { launch, steps, events, deliveries, attempts: await attemptsByDelivery(db, deliveries.map((d) => d.id)), watches };
}

interface Tx {
  signature?: string;
  type?: string;
}

const Json: FC<{ value: unknown }> = ({ value }) => <pre class="mono">{JSON.stringify(value, null, 2)}</pre>;

/** Explorer link for a transaction or an address on the configured cluster. */
export const explorerUrl = (cluster: string, kind: 'tx' | 'address', value: string) => `https://explorer.solana.com/${kind}/${encodeURIComponent(value)}?cluster=${encodeURIComponent(cluster)}`;

const isAddress = (v: unknown): v is string => typeof v === 'string' && /^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(v);

export const LaunchPage: FC<{ user: DashboardUser; detail: LaunchDetail; cluster: string }> = ({ user, detail, cluster }) => {
  const { launch, steps } = detail;
  const request = parseJson<Record<string, unknown>>(launch.request, {});
  const results = parseJson<Record<string, unknown>>(launch.results, {});
  const error = parseJson<unknown>(launch.error, null);
  return (
    <>
      <h1>
        {String(request.name ?? 'Launch')} <span class="muted">({String(request.ticker ?? '')})</span> <Badge value={launch.status} />
      </h1>
      <p class="mono">
        {launch.id} · owner {launch.owner} · created {time(launch.created_at)} · completed {time(launch.completed_at)}
      </p>
      {error !== null && (
        <div class="flash error">
          <Json value={error} />
        </div>
      )}
      <h2>Steps</h2>
      <div class="scroll">
        <table id="steps">
          <tr>
            <th>Step</th>
            <th>Status</th>
            <th>Attempts</th>
            <th>Started</th>
            <th>Duration</th>
            <th>Transactions</th>
            <th>Result</th>
          </tr>
          {steps.map((s) => (
            <tr data-step={s.name}>
              <td>{s.name}</td>
              <td>
                <Badge value={s.status} />
                {s.status === 'waiting' && s.next_attempt_at !== null ? <div class="muted">next try {time(s.next_attempt_at)}</div> : ''}
              </td>
              <td>{s.attempts}</td>
              <td>{time(s.started_at)}</td>
              <td>{s.started_at !== null && s.completed_at !== null ? duration(s.completed_at - s.started_at) : '—'}</td>
              <td class="mono">
                {parseJson<Tx[]>(s.transactions, []).map((tx) =>
                  tx.signature ? (
                    <div>
                      {tx.type ? `${tx.type}: ` : ''}
                      <a href={explorerUrl(cluster, 'tx', tx.signature)} rel="noreferrer" target="_blank">
                        {`${tx.signature.slice(0, 16)}…`}
                      </a>
                    </div>
                  ) : (
                    ''
                  ),
                )}
              </td>
              <td>{s.result ? <Json value={parseJson(s.result, null)} /> : s.error ? <Json value={parseJson(s.error, null)} /> : ''}</td>
            </tr>
          ))}
        </table>
      </div>
      <h2>{launch.status === 'complete' ? 'Results' : 'Partial results'}</h2>
      <div class="scroll">
        <table>
          {Object.entries(results).map(([k, v]) => (
            <tr>
              <th>{k}</th>
              <td class="mono">{isAddress(v) ? <a href={explorerUrl(cluster, 'address', v)}>{v}</a> : <Json value={v} />}</td>
            </tr>
          ))}
        </table>
      </div>
      {detail.watches !== null && (
        <>
          <h2>Watches</h2>
          {detail.watches.length === 0 ? (
            <p class="muted">none</p>
          ) : (
            <div class="scroll">
              <table id="watches">
                <tr>
                  <th>Kind</th>
                  <th>Address</th>
                  <th>State</th>
                  <th>Last activity</th>
                  <th>Next check</th>
                  <th>Ends</th>
                </tr>
                {detail.watches.map((w) => (
                  <tr>
                    <td>{w.kind}</td>
                    <td class="mono">
                      <a href={explorerUrl(cluster, 'address', w.address)}>{w.address}</a>
                    </td>
                    <td>
                      <Badge value={w.state} /> {w.ended_reason ?? ''}
                    </td>
                    <td>{time(w.last_activity_at)}</td>
                    <td>{w.state === 'active' ? time(w.next_check_at) : '—'}</td>
                    <td>{time(w.ends_at)}</td>
                  </tr>
                ))}
              </table>
            </div>
          )}
        </>
      )}
      <h2>Webhook deliveries</h2>
      <DeliveryTable user={user} rows={detail.deliveries} attempts={detail.attempts} showLaunch={false} back={`/dashboard/launches/${launch.id}`} />
      {detail.deliveries.length === LAUNCH_ROWS && <p class="muted">The first {LAUNCH_ROWS} deliveries; the API's GET /api/launches/{launch.id}/deliveries pages through all.</p>}
      <h2>Event log</h2>
      <div class="scroll">
        <table id="events">
          <tr>
            <th>#</th>
            <th>Event</th>
            <th>Committed</th>
            <th>Payload</th>
          </tr>
          {detail.events.map((e) => (
            <tr>
              <td>{e.sequence}</td>
              <td>{e.event}</td>
              <td>{time(e.created_at)}</td>
              <td>
                <details>
                  <summary>payload</summary>
                  <Json value={parseJson(e.body, e.body)} />
                </details>
              </td>
            </tr>
          ))}
        </table>
        {detail.events.length === LAUNCH_ROWS && <p class="muted">The first {LAUNCH_ROWS} events; the API's GET /api/launches/{launch.id}/events pages through all.</p>}
      </div>
    </>
  );
};
