import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PAGE, listLaunchesPage } from '../../src/dashboard/launches.js';
import { listDeliveriesPage } from '../../src/dashboard/deliveries.js';
import { DEAD_LETTER_KINDS, listDeadLettersPage } from '../../src/dashboard/deadLetters.js';
import { listApiKeys } from '../../src/auth/apiKeys.js';
import { randomUUID } from 'node:crypto';
import type { DashboardUser } from '../../src/dashboard/session.js';
import { manualClock } from '../../src/lib/clock.js';
import { commitEvents, createTestDb, insertLaunch, newSecretBox, type TestDb } from '../support/webhooks.js';

/**
 * The dashboard's lists page by offset, newest first. Rows that share a created_at (a burst of
 * launches in one millisecond, the deliveries of one commit) must keep one order from page to page,
 * or a row shows on two pages and another on none: PostgreSQL returns ties in no set order (a
 * bounded sort of LIMIT 50 and of LIMIT 100 may order them differently), so the order ends on the
 * unique id. Every row here has the same created_at, the worst case.
 */
const admin: DashboardUser = { keyId: 'key_admin', owner: 'ops', scopes: ['admin'], isAdmin: true, csrf: 'csrf' };
const ROWS = PAGE * 3 - 7;

let tdb: TestDb;
beforeEach(async () => {
  tdb = await createTestDb();
});
afterEach(async () => {
  await tdb.close();
});

async function allPages<T extends { id: string }>(page: (offset: number) => Promise<T[]>): Promise<string[][]> {
  const pages: string[][] = [];
  for (let offset = 0; ; offset += PAGE) {
    const rows = await page(offset);
    pages.push(rows.map((r) => r.id));
    if (rows.length < PAGE) return pages;
  }
}

/** Every id once: none repeated on a later page, none skipped (compared as sorted lists, not by the database's collation). */
function expectEachOnce(listed: string[], ids: string[]): void {
  expect(listed.length).toBe(ids.length);
  expect([...listed].sort()).toEqual([...ids].sort());
}

describe('dashboard pages of rows that share a created_at', () => {
  it('list every launch exactly once across the pages', async () => {
    const clock = manualClock(Date.UTC(2026, 10, 28, 12));
    const box = newSecretBox();
    const ids: string[] = [];
    for (let i = 0; i < ROWS; i++) ids.push(await insertLaunch(tdb.db, clock, { url: 'https://hooks.example.com/a', secret: 'whsec_page_order', box, owner: i % 2 ? 'acme' : 'globex' }));
    // Move half of the rows (an update writes a new row version on PostgreSQL): the heap order is not the id order.
    await tdb.db.updateTable('launches').set({ status: 'complete' }).where('owner', '=', 'acme').execute();

    const pages = await allPages((offset) => listLaunchesPage(tdb.db, admin, { offset }));
    expect(pages.map((p) => p.length)).toEqual([PAGE, PAGE, ROWS - 2 * PAGE]);
    expectEachOnce(pages.flat(), ids);
  });

  it('list every delivery exactly once across the pages', async () => {
    const clock = manualClock(Date.UTC(2026, 10, 28, 12));
    const launchId = await insertLaunch(tdb.db, clock, { url: 'https://hooks.example.com/b', secret: 'whsec_page_order', box: newSecretBox() });
    await commitEvents(tdb.db, clock, launchId, ROWS);
    const ids = (await tdb.db.selectFrom('deliveries').select('id').execute()).map((r) => r.id);
    expect(ids).toHaveLength(ROWS);
    await tdb.db.updateTable('deliveries').set({ attempt_count: 1 }).where('id', 'in', ids.filter((_, i) => i % 2 === 1)).execute();

    const pages = await allPages((offset) => listDeliveriesPage(tdb.db, admin, { offset }, new Set()));
    expect(pages.map((p) => p.length)).toEqual([PAGE, PAGE, ROWS - 2 * PAGE]);
    expectEachOnce(pages.flat(), ids);
  });
  it('list every dead letter exactly once across the pages, with no filter and by status (merged kinds)', async () => {
    const at = Date.UTC(2026, 10, 28, 12);
    const ids: string[] = [];
    for (let i = 0; i < ROWS; i++) {
      const id = `dlq_${randomUUID().replaceAll('-', '')}`; // random ids: the insertion order is not the id order (hex only: one order in every collation)
      ids.push(id);
      await tdb.db
        .insertInto('dead_letters')
        .values({ id, kind: DEAD_LETTER_KINDS[i % 3]!, owner: 'acme', launch_id: `lch_${i}`, delivery_id: null, event_id: null, step: null, error_code: 'x', error_message: 'x', status: 'open', retry_count: 0, created_at: at, updated_at: at, resolved_at: null })
        .execute();
    }
    await tdb.db.updateTable('dead_letters').set({ retry_count: 1 }).where('id', 'in', ids.filter((_, i) => i % 2 === 1)).execute();

    const plain = await allPages((offset) => listDeadLettersPage(tdb.db, { offset }));
    expect(plain.map((p) => p.length)).toEqual([PAGE, PAGE, ROWS - 2 * PAGE]);
    expectEachOnce(plain.flat(), ids);
    const open = await allPages((offset) => listDeadLettersPage(tdb.db, { status: 'open', offset }));
    expectEachOnce(open.flat(), ids);
    // Every row is open, so the merged kinds list in the unfiltered list's order: newest first, then by id.
    expect(open.flat()).toEqual(plain.flat());
  });

  it('listApiKeys returns keys of one created_at in the id order', async () => {
    const at = Date.UTC(2026, 10, 28, 12);
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const id = `key_${randomUUID()}`;
      ids.push(id);
      await tdb.db.insertInto('api_keys').values({ id, owner: 'acme', name: null, prefix: `p${i}`, key_hash: `h${i}`, scopes: '[]', created_at: at, revoked_at: null, last_used_at: null }).execute();
    }
    // Revoke half (a new row version on PostgreSQL): the table's physical order is not the id order.
    await tdb.db.updateTable('api_keys').set({ revoked_at: at }).where('id', 'in', ids.filter((_, i) => i % 2 === 0)).execute();
    const byId = (await tdb.db.selectFrom('api_keys').select('id').orderBy('id').execute()).map((r) => r.id);
    expect((await listApiKeys(tdb.db)).map((k) => k.id)).toEqual(byId);
  });
});
