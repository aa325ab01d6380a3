import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openPostgres, type Db } from '../../src/db/database.js';
import { createAppendCursor } from '../../src/metrics/appendCursor.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { parsePrometheusText, sumSamples } from '../../src/metrics/parseText.js';
import { createPostgresDatabase, onPostgres } from '../support/database.js';

/** Offers rows to the cursor as one read would, and returns those it says to count. */
function read(cursor: ReturnType<typeof createAppendCursor>, rowids: number[], now: number): number[] {
  const counted = rowids.filter((rowid) => rowid > cursor.floor && cursor.take(rowid, now));
  cursor.settle(now);
  return counted;
}

describe('the metrics cursor over an append-only table', () => {
  it('counts a row that commits after a row with a higher rowid, once', () => {
    const cursor = createAppendCursor(30_000);
    // Rowid 2 is held by a transaction still open: the first read sees 1 and 3.
    expect(read(cursor, [1, 3], 0)).toEqual([1, 3]);
    expect(cursor.floor).toBe(1);
    // It commits; the next read starts at the floor, counts 2 and not 3 again.
    expect(read(cursor, [2, 3, 4], 1_000)).toEqual([2, 4]);
    expect(cursor.floor).toBe(4);
  });

  it('passes a gap whose transaction rolled back once a row above it is older than the timeout', () => {
    const cursor = createAppendCursor(30_000);
    expect(read(cursor, [1, 3, 4], 0)).toEqual([1, 3, 4]);
    expect(read(cursor, [3, 4, 5], 29_999)).toEqual([5]);
    expect(cursor.floor).toBe(1);
    // 3 was first read 30 s ago: 2 is never coming; 3, 4 and 5 are counted, so the floor passes them.
    expect(read(cursor, [3, 4, 5], 30_000)).toEqual([]);
    expect(cursor.floor).toBe(5);
    // Later gaps wait for their own rows' age, not for the first gap's.
    expect(read(cursor, [7], 30_001)).toEqual([7]);
    expect(cursor.floor).toBe(5);
    expect(read(cursor, [7, 8], 60_001)).toEqual([8]);
    expect(cursor.floor).toBe(8);
  });

  it('with no timeout (one writer, rows commit in rowid order) continues after the last row read', () => {
    const cursor = createAppendCursor(0);
    expect(read(cursor, [1, 5, 9], 0)).toEqual([1, 5, 9]);
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
});
