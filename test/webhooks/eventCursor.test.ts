import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { recordEvent } from '../../src/webhooks/outbox.js';
import { createEventCursor } from '../../src/webhooks/stream/eventCursor.js';
import { onPostgres } from '../support/database.js';
import { commitEvents, createTestDb, insertLaunch, newSecretBox, type TestDb } from '../support/webhooks.js';

/** The event stream's cursor (src/webhooks/stream/eventCursor.ts): outbox order, one owner, nothing skipped. */
let tdb: TestDb;
const clock = manualClock(Date.now());
const box = newSecretBox();
let wall = 0;

beforeEach(async () => {
  tdb = await createTestDb();
  wall = 0;
});
afterEach(async () => tdb.close());

const cursorFor = (owner: string, gapTimeoutMs = 10_000) => createEventCursor({ db: tdb.db, owner, after: 0, gapTimeoutMs, now: () => wall });

describe('the event cursor', () => {
  it("reads one owner's events in outbox order across pages, and no other owner's", async () => {
    const ours = await insertLaunch(tdb.db, clock, { url: 'http://127.0.0.1:9/h', secret: 'whsec_x', box, owner: 'acme' });
    const theirs = await insertLaunch(tdb.db, clock, { url: 'http://127.0.0.1:9/h', secret: 'whsec_x', box, owner: 'globex' });
    const expected: string[] = [];
    for (let i = 0; i < 5; i++) {
      expected.push(...(await commitEvents(tdb.db, clock, ours, 60)));
      await commitEvents(tdb.db, clock, theirs, 7);
    }
    const cursor = cursorFor('acme');
    const got: string[] = [];
    for (;;) {
      const { rows, more } = await cursor.next();
      got.push(...rows.map((r) => r.id));
      if (!more) break;
    }
    expect(got).toEqual(expected);
    expect((await cursor.next()).rows).toEqual([]);
  });
});

describe.skipIf(!onPostgres)('the event cursor on PostgreSQL', () => {
  it('waits below a rowid whose transaction has not committed, then reads both in rowid order', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url: 'http://127.0.0.1:9/h', secret: 'whsec_x', box, owner: 'acme' });
    const other = await insertLaunch(tdb.db, clock, { url: 'http://127.0.0.1:9/h', secret: 'whsec_x', box, owner: 'acme' });
    const cursor = cursorFor('acme');
    let release!: () => void;
    let inserted!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const didInsert = new Promise<void>((resolve) => (inserted = resolve));
    let slowId = '';
    const slow = tdb.db.transaction().execute(async (trx) => {
      slowId = (await recordEvent(trx, clock, { launchId, event: 'launch.step_complete', data: {} })).eventId;
      inserted();
      await held;
    });
    await didInsert;
    const [fastId] = await commitEvents(tdb.db, clock, other, 1);
    expect((await cursor.next()).rows).toEqual([]);
    wall += 5_000;
    expect((await cursor.next()).rows).toEqual([]);
    release();
    await slow;
    expect((await cursor.next()).rows.map((r) => r.id)).toEqual([slowId, fastId]);
  });

  it('passes a gap once it is older than the gap timeout (its transaction rolled back)', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url: 'http://127.0.0.1:9/h', secret: 'whsec_x', box, owner: 'acme' });
    const cursor = cursorFor('acme', 10_000);
    await tdb.db
      .transaction()
      .execute(async (trx) => {
        await recordEvent(trx, clock, { launchId, event: 'launch.step_complete', data: {} });
        throw new Error('roll back');
      })
      .catch(() => undefined);
    const [after] = await commitEvents(tdb.db, clock, launchId, 1);
    expect((await cursor.next()).rows).toEqual([]);
    wall += 9_999;
    expect((await cursor.next()).rows).toEqual([]);
    wall += 1;
    expect((await cursor.next()).rows.map((r) => r.id)).toEqual([after]);
  });
});
