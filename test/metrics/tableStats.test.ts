import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, type Db } from '../../src/db/database.js';
import { manualClock } from '../../src/lib/clock.js';
import { parsePrometheusText, type Sample } from '../../src/metrics/parseText.js';
import { createTableStats, TABLE_STATS_REFRESH_MS } from '../../src/metrics/tableStats.js';
import { serveOnPort, type ServedService } from '../reliability/support/server.js';
import { onPostgres } from '../support/database.js';
import { startTestService, type TestService } from '../support/service.js';

const DAY = 86_400_000;
const TABLES = ['launches', 'outbox_events', 'deliveries', 'delivery_attempts'] as const;

let n = 0;
const id = (prefix: string) => `${prefix}_${++n}_${Math.random().toString(36).slice(2, 8)}`;

/** A completed launch with `events` events, each delivered to two receivers (one attempt each), all at `at`. */
async function settledHistory(db: Db, at: number, events: number): Promise<void> {
  const launchId = id('lch');
  await db
    .insertInto('launches')
    .values({ id: launchId, owner: 'acme', status: 'complete', request: '{}', webhook_url: 'http://127.0.0.1:9/h', webhook_secret_enc: 'x', error: null, request_id: null, lease_owner: null, lease_expires_at: null, created_at: at, updated_at: at, started_at: at, completed_at: at })
    .execute();
  for (let e = 0; e < events; e += 1) {
    const eventId = id('evt');
    await db.insertInto('outbox_events').values({ id: eventId, launch_id: launchId, sequence: e + 1, event: 'launch.step_complete', body: '{}', request_id: null, created_at: at }).execute();
    for (let k = 0; k < 2; k += 1) {
      const deliveryId = id('dlv');
      await db
        .insertInto('deliveries')
        .values({ id: deliveryId, event_id: eventId, launch_id: launchId, url: 'http://127.0.0.1:9/h', host: '127.0.0.1:9', endpoint: 'http://127.0.0.1:9/h', status: 'delivered', next_attempt_at: at, lease_owner: null, lease_expires_at: null, last_error: null, last_status_code: 200, created_at: at, updated_at: at, completed_at: at })
        .execute();
      await db
        .insertInto('delivery_attempts')
        .values({ id: id('att'), delivery_id: deliveryId, attempt: 1, started_at: at, duration_ms: 5, status_code: 200, outcome: 'success', error_class: null, error_message: null, response_body: null })
        .execute();
    }
  }
}

type Figures = Record<string, { rows: number; bytes: number }>;
function figures(samples: Sample[]): Figures {
  const out: Figures = {};
  for (const s of samples) {
    if (s.name !== 'launch_service_table_rows' && s.name !== 'launch_service_table_bytes') continue;
    const table = s.labels.table ?? '';
    out[table] ??= { rows: NaN, bytes: NaN };
    out[table][s.name === 'launch_service_table_rows' ? 'rows' : 'bytes'] = s.value;
  }
  return out;
}

/**
 * PostgreSQL's live-row estimate follows commits within seconds (each backend sends its counts to
 * the statistics when it next goes idle, at most once a second): on PostgreSQL this waits for it.
 */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + (onPostgres ? 30_000 : 5_000);
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** On PostgreSQL, waits until the statistics count every row of `table` (SQLite counts exactly at once). */
async function statisticsCaughtUp(db: Db, table: string): Promise<void> {
  if (!onPostgres) return;
  await until(async () => {
    const { rows } = await sql<{ live: number; n: number }>`
      select (select n_live_tup from pg_stat_user_tables where relname = ${table}) as live, (select count(*) from ${sql.table(table)}) as n`.execute(db);
    return Number(rows[0]?.live) === Number(rows[0]?.n);
  }, `the statistics of ${table}`);
}

describe('rows and bytes per table on /metrics', () => {
  let t: TestService | undefined;
  let http: ServedService | undefined;
  afterEach(async () => {
    await http?.close();
    await t?.close();
    http = t = undefined;
  });

  const scrape = async (): Promise<Figures> => {
    const res = await http!.send('GET', '/metrics');
    expect(res.status).toBe(200);
    return figures(parsePrometheusText(res.text));
  };
  /** Computes the figures now (as the background refresh would) and scrapes them. */
  const refreshed = async (): Promise<Figures> => {
    await t!.service.metrics.refreshTableStats();
    return scrape();
  };

  it('shows rows and bytes of the tables that hold rows, and fewer rows after a retention sweep', async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    t = await startTestService({ clock });
    http = await serveOnPort(t);
    const db = t.service.db;
    await settledHistory(db, clock.now(), 20);
    clock.advance(31 * DAY);
    await settledHistory(db, clock.now(), 5);

    let before: Figures = {};
    await until(async () => {
      before = await refreshed();
      return TABLES.every((table) => (before[table]?.rows ?? 0) > 0);
    }, 'rows of every table');
    for (const table of TABLES) expect(before[table]?.bytes, table).toBeGreaterThan(0);
    if (!onPostgres) {
      // SQLite counts exactly.
      expect(before).toMatchObject({ launches: { rows: 2 }, outbox_events: { rows: 25 }, deliveries: { rows: 50 }, delivery_attempts: { rows: 50 } });
    }
    // Every table of the service has both series, an empty one too.
    expect(before.dead_letters).toEqual({ rows: 0, bytes: expect.any(Number) as number });

    // The first history is past RETENTION (30 days): its events, deliveries and attempts go.
    expect(await t.service.retention.drain()).toMatchObject({ events: 20 });
    let after: Figures = {};
    await until(async () => {
      after = await refreshed();
      return (['outbox_events', 'deliveries', 'delivery_attempts'] as const).every((table) => after[table]!.rows < before[table]!.rows);
    }, 'fewer rows after the sweep');
    if (!onPostgres) expect(after).toMatchObject({ launches: { rows: 2 }, outbox_events: { rows: 5 }, deliveries: { rows: 10 }, delivery_attempts: { rows: 10 } });
  });

  it('serves the cached figures: a scrape starts a computation when they are older than 5 minutes and never waits for it', async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    t = await startTestService({ clock });
    http = await serveOnPort(t);
    const db = t.service.db;
    await settledHistory(db, clock.now(), 3);
    await statisticsCaughtUp(db, 'deliveries');

    // The first scrape has nothing computed yet: no series, and a computation starts.
    expect((await scrape()).deliveries).toBeUndefined();
    // Joins the computation that scrape started.
    await t.service.metrics.refreshTableStats();
    const first = (await scrape()).deliveries;
    expect(first?.rows).toBe(6);

    await settledHistory(db, clock.now(), 3);
    await statisticsCaughtUp(db, 'deliveries');
    clock.advance(5 * 60_000 - 1);
    // Within 5 minutes the scrape shows the same figures, however the table changed.
    expect((await scrape()).deliveries).toEqual(first);

    clock.advance(1);
    // Past them, the scrape still answers with the cached figures and starts the next computation.
    expect((await scrape()).deliveries).toEqual(first);
    await t.service.metrics.refreshTableStats();
    expect((await scrape()).deliveries?.rows).toBe(12);
  });
});

describe('table figures that cannot be trusted', () => {
  let t: TestService | undefined;
  let http: ServedService | undefined;
  afterEach(async () => {
    await http?.close();
    await t?.close();
    http = t = undefined;
  });

  it('shows 0 rows for a table emptied since its last ANALYZE (not the row count of that ANALYZE)', async () => {
    t = await startTestService({ clock: manualClock(Date.UTC(2026, 0, 1)) });
    http = await serveOnPort(t);
    const db = t.service.db;
    await settledHistory(db, Date.UTC(2026, 0, 1), 10);
    // The inserts' counts reach the statistics before the ANALYZE, so its count is the last word on them.
    await statisticsCaughtUp(db, 'delivery_attempts');
    if (onPostgres) await sql`analyze delivery_attempts`.execute(db);
    await db.deleteFrom('delivery_attempts').execute();
    await statisticsCaughtUp(db, 'delivery_attempts');
    await t.service.metrics.refreshTableStats();
    const res = await http.send('GET', '/metrics');
    expect(res.status).toBe(200);
    expect(figures(parsePrometheusText(res.text)).delivery_attempts?.rows).toBe(0);
  });
});

describe('a table-size computation that fails', () => {
  it('clears the figures instead of showing the last ones as current, and shows new ones once it succeeds', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'table-stats-'));
    const file = join(dir, 'stats.sqlite');
    // No background checkpointer: its own connection, opened by path, would make a new empty file where this one was moved from.
    const opened = openDatabase(file, { backgroundCheckpoint: false });
    try {
      await migrateToLatest(opened.db);
      const clock = manualClock(Date.UTC(2026, 0, 1));
      const errors: unknown[] = [];
      const stats = createTableStats({ db: opened.db, clock, sqlitePath: file, onError: (e) => errors.push(e) });
      await stats.refresh();
      expect(stats.read()?.some((s) => s.table === 'deliveries')).toBe(true);

      // The worker opens the path read-only and must find it: moved away, the computation fails.
      renameSync(file, `${file}.moved`);
      clock.advance(TABLE_STATS_REFRESH_MS);
      stats.read();
      await expect(stats.refresh()).rejects.toThrow();
      expect(stats.read()).toBeUndefined();
      expect(errors.length).toBeGreaterThan(0);

      renameSync(`${file}.moved`, file);
      clock.advance(TABLE_STATS_REFRESH_MS);
      await stats.refresh();
      expect(stats.read()?.some((s) => s.table === 'deliveries')).toBe(true);
      await stats.close();
    } finally {
      await opened.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
