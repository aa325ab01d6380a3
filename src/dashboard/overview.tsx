import { sql } from 'kysely';
import type { FC } from 'hono/jsx';
import type { Db } from '../db/database.js';
import { orderedJoin, withoutIndex } from '../db/dialect.js';
import { percentile } from '../lib/percentile.js';
import type { HealthReport } from '../health/healthService.js';
import { LineChart } from './charts.js';
import { Badge, duration, inWords } from './layout.js';
import type { BreakerView } from './breakers.js';
import type { DashboardUser } from './session.js';

const MINUTES = 60;

export interface OverviewData {
  launches: Record<string, number>;
  deliveries: Record<string, number>;
  openDeadLetters: number | null;
  perMinute: { delivered: number[]; failed: number[]; launches: number[]; p50: Array<number | null>; p99: Array<number | null> };
}

/** Counts on the overview stop here and read "1000+" (the lists below page through the rest). */
export const COUNT_CAP = 1000;
const LAUNCH_STATUSES = ['awaiting_signatures', 'queued', 'processing', 'complete', 'failed'];
const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'];
const shown = (n: number) => (n > COUNT_CAP ? `${COUNT_CAP}+` : String(n));

/** Counts by status and the last hour per minute, for everyone (admin) or one owner. */
export async function loadOverview(db: Db, user: DashboardUser, now: number): Promise<OverviewData> {
  const owner = user.isAdmin ? undefined : user.owner;
  const since = now - MINUTES * 60_000;
  // Each count stops at COUNT_CAP rows of its index, so the page costs the same at any volume.
  const launches: Record<string, number> = {};
  for (const status of LAUNCH_STATUSES) {
    const { rows } = await sql<{ n: number }>`select count(*) as n from (select 1 from launches where status = ${status} ${owner ? sql`and owner = ${owner}` : sql``} limit ${COUNT_CAP + 1}) as counted`.execute(db);
    launches[status] = Number(rows[0]?.n ?? 0);
  }
  const deliveries: Record<string, number> = {};
  for (const status of DELIVERY_STATUSES) {
    // For an owner, walk its launches first (CROSS JOIN keeps that order in SQLite), then their deliveries
    // by launch (`+` keeps SQLite off the status index, which would scan every owner's deliveries).
    const { rows } = owner
      ? await sql<{ n: number }>`select count(*) as n from (select 1 from launches l ${orderedJoin(db)} deliveries d on d.launch_id = l.id
          where l.owner = ${owner} and ${withoutIndex(db, 'd.status')} = ${status} limit ${COUNT_CAP + 1}) as counted`.execute(db)
      : await sql<{ n: number }>`select count(*) as n from (select 1 from deliveries where status = ${status} limit ${COUNT_CAP + 1}) as counted`.execute(db);
    deliveries[status] = Number(rows[0]?.n ?? 0);
  }
  // The last hour's attempts come off the started_at index first (CROSS JOIN), then the owner filter.
  const attempts = await sql<{ minute: number; outcome: string; duration_ms: number }>`
    select (a.started_at - ${since}) / 60000 as minute, a.outcome, a.duration_ms from delivery_attempts a
    ${owner ? sql`${orderedJoin(db)} deliveries d on d.id = a.delivery_id ${orderedJoin(db)} launches l on l.id = d.launch_id and l.owner = ${owner}` : sql``}
    where a.started_at >= ${since} order by a.started_at limit 50000`.execute(db);
  let created = db.selectFrom('launches').select(sql<number>`(created_at - ${since}) / 60000`.as('minute')).where('created_at', '>=', since);
  if (owner) created = created.where('owner', '=', owner);

  const delivered = new Array<number>(MINUTES).fill(0);
  const failed = new Array<number>(MINUTES).fill(0);
  const durations: number[][] = Array.from({ length: MINUTES }, () => []);
  for (const a of attempts.rows) {
    const m = Math.min(MINUTES - 1, Math.max(0, Math.floor(Number(a.minute))));
    (a.outcome === 'success' ? delivered : failed)[m]! += 1;
    durations[m]!.push(Number(a.duration_ms));
  }
  const perLaunch = new Array<number>(MINUTES).fill(0);
  for (const row of await created.execute()) perLaunch[Math.min(MINUTES - 1, Math.max(0, Math.floor(Number(row.minute))))]! += 1;
  for (const d of durations) d.sort((x, y) => x - y);
  const deadLetters = user.isAdmin
    ? Number((await db.selectFrom('dead_letters').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'open').executeTakeFirstOrThrow()).n)
    : null;
  return {
    launches,
    deliveries,
    openDeadLetters: deadLetters,
    perMinute: {
      delivered,
      failed,
      launches: perLaunch,
      p50: durations.map((d) => percentile(d, 50)),
      p99: durations.map((d) => percentile(d, 99)),
    },
  };
}

const Counts: FC<{ title: string; counts: Record<string, number>; order: string[] }> = ({ title, counts, order }) => (
  <>
    <h2>{title}</h2>
    <div class="cards">
      {order.map((status) => (
        <div class="card">
          <Badge value={status} />
          <b data-count={`${title.toLowerCase()}-${status}`}>{shown(counts[status] ?? 0)}</b>
        </div>
      ))}
    </div>
  </>
);

/** What the badge says and why: degraded when a check fails or (for an admin) a breaker is open. */
export function verdict(health: HealthReport, breakers: readonly BreakerView[], isAdmin: boolean): { status: HealthReport['status']; reasons: string[] } {
  const reasons = Object.entries(health.checks)
    .filter(([, check]) => check.status !== 'pass')
    .map(([name, check]) => `the ${name} check fails${check.message ? `: ${check.message}` : ''}`);
  if (isAdmin) for (const b of breakers.filter((b) => b.state !== 'closed')) reasons.push(`the breaker of ${b.endpoint} is ${b.state}: its deliveries wait`);
  const status = health.status === 'unhealthy' ? 'unhealthy' : reasons.length > 0 ? 'degraded' : 'healthy';
  return { status, reasons };
}

/** A check's message for an operator: the cache's "age 6224 ms" as "refreshed 6 s ago". */
const checkMessage = (name: string, message: string | undefined) => {
  const age = name === 'cache' ? /^age (\d+) ms$/.exec(message ?? '') : null;
  return age ? `refreshed ${inWords(Number(age[1]))} ago` : (message ?? '');
};

export const OverviewPage: FC<{ user: DashboardUser; data: OverviewData; health: HealthReport; breakers: BreakerView[] }> = ({ user, data, health, breakers }) => {
  const { status, reasons } = verdict(health, breakers, user.isAdmin);
  const notClosed = breakers.filter((b) => b.state !== 'closed');
  return (
    <>
      <h1>
        Overview <Badge value={status} />
      </h1>
      {reasons.length > 0 && (
        <div class={status === 'unhealthy' ? 'flash error' : 'warn'} id="reasons">
          <strong>{status === 'unhealthy' ? 'Unhealthy' : 'Degraded'}</strong>
          <ul>
            {reasons.map((r) => (
              <li>{r}</li>
            ))}
          </ul>
        </div>
      )}
      <h2>Health</h2>
      <div class="scroll">
        <table id="checks">
          <tr>
            <th>Check</th>
            <th>Status</th>
            <th>Latency</th>
            <th>Detail</th>
          </tr>
          {Object.entries(health.checks).map(([name, check]) => (
            <tr data-check={name} class={check.status === 'pass' ? '' : 'hot'}>
              <td>{name}</td>
              <td>
                <Badge value={check.status} />
              </td>
              <td>{duration(check.latencyMs)}</td>
              <td>{checkMessage(name, check.message)}</td>
            </tr>
          ))}
        </table>
      </div>
      {user.isAdmin && (
        <>
          <h2>Circuit breakers</h2>
          {notClosed.length === 0 ? (
            <p id="breakers-summary">
              {breakers.length === 0 ? 'No endpoint has failed.' : breakers.length === 1 ? 'The one known breaker is closed.' : `All ${breakers.length} known breakers are closed.`} <a href="/dashboard/breakers">Breakers</a>
            </p>
          ) : (
            <div class="scroll">
              <table id="open-breakers">
                <tr>
                  <th>Endpoint</th>
                  <th>State</th>
                  <th>Failures</th>
                  <th>Open since</th>
                </tr>
                {notClosed.map((b) => (
                  <tr class="hot" data-breaker={b.host}>
                    <td class="mono">
                      <a href={`/dashboard/breakers#${encodeURIComponent(b.endpoint)}`}>{b.endpoint}</a>
                    </td>
                    <td>
                      <Badge value={b.state} />
                    </td>
                    <td>{b.failures}</td>
                    <td>{b.openedAt === null ? '—' : `${inWords(Date.parse(health.timestamp) - b.openedAt)} ago`}</td>
                  </tr>
                ))}
              </table>
            </div>
          )}
          <p>
            Open dead letters: <a href="/dashboard/dead-letters?status=open">{data.openDeadLetters}</a> · waiting deliveries:{' '}
            <a href="/dashboard/deliveries?status=waiting">behind an open breaker</a>
          </p>
        </>
      )}
      <Counts title="Launches" counts={data.launches} order={LAUNCH_STATUSES} />
      <Counts title="Deliveries" counts={data.deliveries} order={DELIVERY_STATUSES} />
      <h2>Last hour</h2>
      <div class="charts">
        <LineChart
          title="Delivery attempts per minute"
          yLabel="attempts / min"
          unit=""
          minutes={MINUTES}
          series={[
            { name: 'delivered', color: '#17692e', values: data.perMinute.delivered },
            { name: 'failed', color: '#c62828', values: data.perMinute.failed },
          ]}
        />
        <LineChart
          title="Attempt duration per minute"
          yLabel="ms"
          unit=" ms"
          minutes={MINUTES}
          series={[
            { name: 'p50', color: '#1f5fbf', values: data.perMinute.p50 },
            { name: 'p99', color: '#b26a00', values: data.perMinute.p99 },
          ]}
        />
        <LineChart title="Launches created per minute" yLabel="launches / min" unit="" minutes={MINUTES} series={[{ name: 'created', color: '#5b3fbf', values: data.perMinute.launches }]} />
      </div>
    </>
  );
};
