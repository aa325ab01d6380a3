import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, type OpenedDatabase } from '../../src/db/database.js';

/**
 * Migration 019 drops two indexes of `deliveries` that every write paid for, and migration 022
 * replaces the claim's (status, host, next_attempt_at) index with the lanes' (status, endpoint, owner,
 * next_attempt_at); the lookups they serve must still find their rows through an index (a SCAN of
 * the table would grow with the backlog).
 */
describe('deliveries indexes after migrations 019 and 022', () => {
  let opened: OpenedDatabase;
  beforeAll(async () => {
    opened = openDatabase(':memory:');
    await migrateToLatest(opened.db);
  });
  afterAll(() => opened.close());

  const plan = (text: string, params: unknown[]) =>
    (opened.sqlite.prepare(`explain query plan ${text}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail).join(' ; ');

  it('drops deliveries_due, deliveries_host and deliveries_pending_host, keeps the claim indexes', async () => {
    const { rows } = await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'deliveries'`.execute(opened.db);
    const names = rows.map((r) => r.name);
    expect(names).not.toContain('deliveries_due');
    expect(names).not.toContain('deliveries_host');
    expect(names).not.toContain('deliveries_pending_host');
    expect(names).toEqual(expect.arrayContaining(['deliveries_pending_lane', 'deliveries_leased', 'deliveries_launch', 'deliveries_created']));
  });

  it.each([
    ['a bounded count by status (dashboard overview)', 'select count(*) as n from (select 1 from deliveries where status = ? limit ?) as counted', ['pending', 10_001]],
    ['pending deliveries per endpoint (breakers)', 'select endpoint, count(*) as n from deliveries where status = ? group by endpoint', ['pending']],
    ['one lane\'s due deliveries (the claim)', "select id from deliveries where status = 'pending' and endpoint = ? and owner = ? and next_attempt_at <= ? order by next_attempt_at limit ?", ['https://example.com/hooks', 'acme', 1, 8]],
  ])('%s still searches an index', (_what, text, params) => {
    const detail = plan(text, params);
    expect(detail).toMatch(/SEARCH deliveries USING (COVERING )?INDEX deliveries_pending_lane/);
    expect(detail).not.toMatch(/SCAN deliveries\b/);
  });
});
