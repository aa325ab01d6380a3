import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Db } from '../db/database.js';
import type { BreakerSource, HealthReport } from '../health/healthService.js';
import type { Clock } from '../lib/clock.js';
import { createAppendCursor } from './appendCursor.js';
import { createTableStats, TABLE_STATS_REFRESH_MS, type TableStats } from './tableStats.js';
import { countAwaitingSignatures, countPendingDeliveries, countWatchDeadLetters, endedBelow, fundingTotals, readAttemptsAfter, readEventsAfter, watchLagMs } from './sources.js';

/** Where metrics that are not counted in-process come from. */
export interface MetricsDeps {
  db: Db;
  breakers: BreakerSource;
  /** For the watch lag (how overdue the most overdue active watch is); the system clock by default. */
  clock?: Clock;
  /** The shared health report (the same one /api/health serves). */
  health?: () => Promise<HealthReport>;
  /** The label a host gets in `breaker_not_closed` (production: health's hashed label); none: the host name. */
  hostLabel?: (host: string) => string;
  /** The service's SQLite file, whose table sizes a worker thread reads (tableStats.ts); none on PostgreSQL. */
  sqlitePath?: string;
  /** Where a failed computation of table sizes is reported. */
  onTableStatsError?: (error: unknown) => void;
}

/** Every metric the service exports (README.md, Operations). The one module that defines metrics. */
export interface Metrics {
  readonly registry: Registry;
  /** Counts a launch create refused for its owner's funds or funding limits (per process). */
  countFundingRefused(reason: FundingRefusal): void;
  /** Records one answered HTTP request; `route` is the matched pattern, never the raw path. */
  observeRequest(method: string, route: string, status: number, seconds: number): void;
  /** The Prometheus text exposition. */
  render(): Promise<string>;
  readonly contentType: string;
  /** Computes rows and bytes per table now and waits (tests; a scrape shows the last figures and never waits). */
  refreshTableStats(): Promise<void>;
  /** Ends a computation of table sizes in progress. */
  close(): Promise<void>;
}

export type FundingRefusal = 'insufficient_funds' | 'funding_limit_exceeded';
const FUNDING_REFUSALS: readonly FundingRefusal[] = ['insufficient_funds', 'funding_limit_exceeded'];

const LAUNCH_EVENTS: Record<string, string> = {
  'launch.queued': 'queued',
  'launch.processing': 'processing',
  'launch.complete': 'complete',
  'launch.failed': 'failed',
};
const BREAKER_STATES = ['closed', 'open', 'half-open'] as const;
const BATCH = 5000;
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export function createMetrics(deps: MetricsDeps): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const p = 'launch_service_';

  const requests = new Counter({ name: `${p}http_requests_total`, help: 'HTTP requests answered, by method, route pattern and status', labelNames: ['method', 'route', 'status'], registers: [registry] });
  const requestSeconds = new Histogram({
    name: `${p}http_request_duration_seconds`,
    help: 'HTTP request duration by method and route pattern',
    labelNames: ['method', 'route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
    registers: [registry],
  });
  const attempts = new Counter({ name: `${p}webhook_attempts_total`, help: 'Webhook delivery attempts by outcome (success, failure)', labelNames: ['outcome'], registers: [registry] });
  const deliverySeconds = new Histogram({
    name: `${p}webhook_delivery_seconds`,
    help: 'Time from the commit of an event delivery to its 2xx answer',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 120, 600, 3600, 7200],
    registers: [registry],
  });
  const launches = new Counter({ name: `${p}launches_total`, help: 'Launch state changes by the status entered (queued, processing, complete, failed)', labelNames: ['status'], registers: [registry] });
  const stepSeconds = new Histogram({
    name: `${p}step_duration_seconds`,
    help: 'Duration of completed launch steps by step',
    labelNames: ['step'],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300],
    registers: [registry],
  });

  // Counters read from the append-only tables: one pass per scrape over what is new. On PostgreSQL
  // a row can commit after a row with a higher rowid; the cursors wait for the database to say a gap
  // is final (appendCursor.ts), so they count it all the same, however long its transaction stays open.
  const attemptsCursor = createAppendCursor();
  const eventsCursor = createAppendCursor();
  async function catchUp(): Promise<void> {
    // Taken before the reads: every transaction below it has ended, so its rows are all visible to them.
    const ended = await endedBelow(deps.db);
    for (let after = attemptsCursor.floor; ;) {
      const rows = await readAttemptsAfter(deps.db, after, BATCH);
      for (const row of rows) {
        after = Number(row.rowid);
        if (!attemptsCursor.take(after, Number(row.horizon))) continue;
        attempts.inc({ outcome: row.outcome });
        if (row.deliveredAfterMs !== null) deliverySeconds.observe(Math.max(0, row.deliveredAfterMs) / 1000);
      }
      if (rows.length < BATCH) break;
    }
    attemptsCursor.settle(ended);
    for (let after = eventsCursor.floor; ;) {
      const rows = await readEventsAfter(deps.db, after, BATCH);
      for (const row of rows) {
        after = Number(row.rowid);
        if (!eventsCursor.take(after, Number(row.horizon))) continue;
        const status = LAUNCH_EVENTS[row.event];
        if (status) launches.inc({ status });
        if (row.step !== null && row.stepMs !== null) stepSeconds.observe({ step: row.step }, Math.max(0, row.stepMs) / 1000);
      }
      if (rows.length < BATCH) break;
    }
    eventsCursor.settle(ended);
  }
  // Present from the first scrape, so rate() has a starting point.
  for (const outcome of ['success', 'failure']) attempts.inc({ outcome }, 0);
  for (const status of Object.values(LAUNCH_EVENTS)) launches.inc({ status }, 0);

  new Gauge({
    name: `${p}outbox_pending`,
    help: 'Webhook deliveries not yet delivered or failed',
    registers: [registry],
    async collect() {
      this.set(await countPendingDeliveries(deps.db));
    },
  });
  new Gauge({
    name: `${p}launches_awaiting_signatures`,
    help: 'Creator-signed launches waiting for the creator’s signatures (status awaiting_signatures), over every owner',
    registers: [registry],
    async collect() {
      this.set(await countAwaitingSignatures(deps.db));
    },
  });
  new Gauge({
    name: `${p}breakers`,
    help: 'Endpoint circuit breakers by state',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const counts: Record<string, number> = { closed: 0, open: 0, 'half-open': 0 };
      for (const b of Object.values(deps.breakers.snapshot())) counts[b.state] = (counts[b.state] ?? 0) + 1;
      for (const state of BREAKER_STATES) this.set({ state }, counts[state] ?? 0);
    },
  });
  // Per-host series only for breakers that are not closed, so the label set stays small.
  new Gauge({
    name: `${p}breaker_not_closed`,
    help: 'Endpoint hosts whose breaker is open or half-open (1), by host and state',
    labelNames: ['host', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      const label = deps.hostLabel ?? ((host: string) => host);
      for (const [host, b] of Object.entries(deps.breakers.snapshot())) if (b.state !== 'closed') this.set({ host: label(host), state: b.state }, 1);
    },
  });
  new Gauge({
    name: `${p}watch_lag_seconds`,
    help: 'How far the chain watcher is behind: seconds since the most overdue active watch was due (0 when none is)',
    registers: [registry],
    async collect() {
      this.set((await watchLagMs(deps.db, (deps.clock ?? { now: () => Date.now() }).now())) / 1000);
    },
  });

  new Counter({
    name: `${p}watch_undecodable_transactions_total`,
    help: 'Transactions a watch could not decode, recorded as dead letters of kind watch and skipped',
    registers: [registry],
    async collect() {
      this.reset();
      this.inc(await countWatchDeadLetters(deps.db));
    },
  });

  // Totals over every owner, never labelled by owner. Reserved and spent are read from the ledger
  // (they survive restarts); a refusal creates nothing, so it is counted where it is raised, per process.
  let funds: Promise<{ reservedLamports: number; spentLamports: number }> | undefined;
  const fundingOnce = () => {
    // One ledger read serves both families of a scrape.
    funds ??= fundingTotals(deps.db).finally(() => setImmediate(() => (funds = undefined)));
    return funds;
  };
  new Gauge({
    name: `${p}funding_reserved_lamports`,
    help: 'Lamports held by open launch reservations (reserved less spent), over every owner',
    registers: [registry],
    async collect() {
      this.set((await fundingOnce()).reservedLamports);
    },
  });
  new Counter({
    name: `${p}funding_spent_lamports_total`,
    help: 'Lamports launches have spent from owners’ funding wallets (the ledger’s spend entries), over every owner',
    registers: [registry],
    async collect() {
      this.reset();
      this.inc((await fundingOnce()).spentLamports);
    },
  });
  const fundingRefused = new Counter({
    name: `${p}funding_refused_total`,
    help: 'Launch creates refused for insufficient_funds or funding_limit_exceeded (counted by this process since it started)',
    labelNames: ['reason'],
    registers: [registry],
  });
  for (const reason of FUNDING_REFUSALS) fundingRefused.inc({ reason }, 0);

  // Rows and bytes per table: computed off the event loop at most every TABLE_STATS_REFRESH_MS and
  // cached (tableStats.ts). They are the database's figures, so instances sharing one report the same.
  const tableStats: TableStats = createTableStats({ db: deps.db, clock: deps.clock ?? { now: () => Date.now() }, sqlitePath: deps.sqlitePath, onError: deps.onTableStatsError });
  const minutes = TABLE_STATS_REFRESH_MS / 60_000;
  new Gauge({
    name: `${p}table_rows`,
    help: `Rows per table: an exact count on SQLite, PostgreSQL's estimate (its statistics' live rows) on PostgreSQL; computed in the background when scraped, at most every ${minutes} minutes; absent while a computation fails`,
    labelNames: ['table'],
    registers: [registry],
    collect() {
      this.reset();
      for (const t of tableStats.read() ?? []) this.set({ table: t.table }, t.rows);
    },
  });
  new Gauge({
    name: `${p}table_bytes`,
    help: `Bytes per table with its indexes (SQLite: its dbstat pages; PostgreSQL: pg_total_relation_size); computed in the background when scraped, at most every ${minutes} minutes; absent while a computation fails`,
    labelNames: ['table'],
    registers: [registry],
    collect() {
      this.reset();
      for (const t of tableStats.read() ?? []) this.set({ table: t.table }, t.bytes);
    },
  });

  const HEALTH_LEVEL = { healthy: 0, degraded: 1, unhealthy: 2 } as const;
  new Gauge({
    name: `${p}health_status`,
    help: 'Overall health as /api/health reports it: 0 healthy, 1 degraded, 2 unhealthy',
    registers: [registry],
    async collect() {
      if (deps.health) this.set(HEALTH_LEVEL[(await deps.health()).status]);
    },
  });

  let scraping: Promise<void> | undefined;
  return {
    registry,
    contentType: registry.contentType,
    refreshTableStats: () => tableStats.refresh(),
    close: () => tableStats.close(),
    countFundingRefused(reason) {
      fundingRefused.inc({ reason });
    },
    observeRequest(method, route, status, seconds) {
      const m = KNOWN_METHODS.has(method) ? method : 'OTHER';
      requests.inc({ method: m, route, status: String(status) });
      requestSeconds.observe({ method: m, route }, seconds);
    },
    async render() {
      // Concurrent scrapes share one catch-up, so no row is counted twice.
      scraping ??= catchUp().finally(() => {
        scraping = undefined;
      });
      await scraping;
      return registry.metrics();
    },
  };
}
