import { sql } from 'kysely';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { migrateToLatest, openPostgres, type Db } from '../../src/db/database.js';
import { createAppendCursor } from '../../src/metrics/appendCursor.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { parsePrometheusText, sumSamples } from '../../src/metrics/parseText.js';
import { createPostgresDatabase, onPostgres } from '../support/database.js';

/** Offers rows to the cursor as one read would (each with the horizon of the snapshot that read it), and returns those it says to count. */
function read(cursor: ReturnType<typeof createAppendCursor>, rowids: number[], horizon: number, ended: number): number[] {
  const counted = rowids.filter((rowid) => rowid > cursor.floor && cursor.take(rowid, horizon));
  cursor.settle(ended);
  return counted;
}

describe('the metrics cursor over an append-only table', () => {
  it('counts a row that commits after a row with a higher rowid, once, however long its transaction stays open', () => {
    const cursor = createAppendCursor();
    // Rowid 2 is held by a transaction still open (its id is below 100, the horizon of the read that saw 3).
    expect(read(cursor, [1, 3], 100, 90)).toEqual([1, 3]);
    expect(cursor.floor).toBe(1);
    // Reads go on while it stays open: transactions below 100 have not all ended, so the floor waits.
    for (let i = 0; i < 5; i++) expect(read(cursor, [3], 100 + i, 95)).toEqual([]);
    expect(cursor.floor).toBe(1);
    // It commits; the next read starts at the floor, counts 2 and not 3 again.
    expect(read(cursor, [2, 3, 4], 120, 95)).toEqual([2, 4]);
    expect(cursor.floor).toBe(4);
  });

  it('passes a gap whose transaction rolled back once every transaction below the horizon that saw the row above it has ended', () => {
    const cursor = createAppendCursor();
    expect(read(cursor, [1, 3, 4], 100, 90)).toEqual([1, 3, 4]);
    expect(read(cursor, [3, 4, 5], 110, 99)).toEqual([5]);
    expect(cursor.floor).toBe(1);
    // Every transaction below 100 has ended: 2 is never coming; the floor passes 3, 4 and 5.
    expect(read(cursor, [3, 4, 5], 115, 100)).toEqual([]);
    expect(cursor.floor).toBe(5);
    // A later gap waits for its own row's horizon (7 was seen at 120), not for the first gap's.
    expect(read(cursor, [7], 120, 110)).toEqual([7]);
    expect(cursor.floor).toBe(5);
    expect(read(cursor, [7, 8], 130, 120)).toEqual([8]);
    expect(cursor.floor).toBe(8);
  });

  it('on SQLite (one writer, rows commit in rowid order) continues after the last row read', () => {
    const cursor = createAppendCursor();
    expect(read(cursor, [1, 5, 9], 0, Number.POSITIVE_INFINITY)).toEqual([1, 5, 9]);
    expect(cursor.floor).toBe(9);
  });
});

describe.skipIf(!onPostgres)('metrics counters on PostgreSQL, where rowids commit out of order', () => {
  let database: { url: string; drop(): Promise<void> };
  let opened: { db: Db; close(): Promise<void> };

  beforeAll(async () => {
    database = await createPostgresDatabase();
    opened = openPostgres(database.url, { poolSize: 4 });
    await migrateToLatest(opened.db);
  });
  afterAll(async () => {
    await opened?.close();
    await database?.drop();
  });

  const insertEvent = (db: Db, id: string, event: string) =>
    sql`insert into outbox_events (id, launch_id, sequence, event, body, created_at)
        values (${id}, ${id}, 1, ${event}, '{}', ${Date.now()})`.execute(db);

  it('counts a launch event whose transaction took its rowid first but committed last', async () => {
    const { db } = opened;
    const metrics = createMetrics({ db, breakers: { snapshot: () => ({}) } });
    const queued = async () => sumSamples(parsePrometheusText(await metrics.render()), 'launch_service_launches_total', (labels) => labels.status === 'queued');

    let commitLate!: () => void;
    const late = new Promise<void>((resolve) => (commitLate = resolve));
    let taken!: () => void;
    const rowidTaken = new Promise<void>((resolve) => (taken = resolve));
    const slow = db.transaction().execute(async (trx) => {
      await insertEvent(trx, 'ev_slow', 'launch.queued');
      taken();
      await late;
    });
    await rowidTaken;
    await insertEvent(db, 'ev_fast', 'launch.queued');
    const rowids = await sql<{ id: string; rowid: number }>`select id, rowid from outbox_events`.execute(db);
    expect(rowids.rows.map((r) => r.id)).toEqual(['ev_fast']);

    expect(await queued()).toBe(1);
    commitLate();
    await slow;
    const committed = await sql<{ id: string; rowid: number }>`select id, rowid::int as rowid from outbox_events order by rowid`.execute(db);
    expect(committed.rows.map((r) => r.id)).toEqual(['ev_slow', 'ev_fast']);
    // The old cursor continued after ev_fast's rowid and never saw ev_slow.
    expect(await queued()).toBe(2);
    expect(await queued()).toBe(2);
  });

  it('counts a delivery attempt whose transaction took a lower rowid and stayed open for minutes while higher ones committed', async () => {
    const { db } = opened;
    await insertEvent(db, 'evt_w', 'launch.started');
    await sql`insert into deliveries (id, launch_id, event_id, url, host, endpoint, status, attempt_count, next_attempt_at, created_at, updated_at)
      values ('dlv_w', 'lch_w', 'evt_w', 'http://h/x', 'h', 'http://h/x', 'pending', 1, 0, 0, 0)`.execute(db);
    const metrics = createMetrics({ db, breakers: { snapshot: () => ({}) } });
    const failures = async () => sumSamples(parsePrometheusText(await metrics.render()), 'launch_service_webhook_attempts_total', (labels) => labels.outcome === 'failure');
    const insertAttempt = (on: Db, id: string) =>
      sql`insert into delivery_attempts (id, delivery_id, attempt, started_at, duration_ms, status_code, outcome, error_class, error_message, response_body)
          values (${id}, 'dlv_w', 1, 0, 1, 500, 'failure', 'http_status', null, null)`.execute(on);

    let commitLate!: () => void;
    const late = new Promise<void>((resolve) => (commitLate = resolve));
    let taken!: () => void;
    const rowidTaken = new Promise<void>((resolve) => (taken = resolve));
    const slow = db.transaction().execute(async (trx) => {
      await insertAttempt(trx, 'att_slow');
      taken();
      await late;
    });
    await rowidTaken;
    await insertAttempt(db, 'att_fast_1');
    expect(await failures()).toBe(1);
    // Minutes pass (the wall clock any timeout would read), rows above keep committing, scrapes go on.
    const realNow = performance.now.bind(performance);
    let skew = 0;
    const spy = vi.spyOn(performance, 'now').mockImplementation(() => realNow() + skew);
    try {
      for (let i = 2; i <= 4; i++) {
        skew += 120_000;
        await insertAttempt(db, `att_fast_${i}`);
        expect(await failures()).toBe(i);
      }
    } finally {
      spy.mockRestore();
    }
    commitLate();
    await slow;
    const rowids = await sql<{ id: string }>`select id from delivery_attempts order by rowid`.execute(db);
    expect(rowids.rows[0]!.id).toBe('att_slow'); // the lowest rowid, committed last
    expect(await failures()).toBe(5);
    expect(await failures()).toBe(5);
  });
});
