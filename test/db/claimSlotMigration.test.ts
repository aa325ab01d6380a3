import { Migrator, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.js';
import { migrations } from '../../src/db/migrations/index.js';
import { slotSpacingMs } from '../../src/webhooks/sql/throttle.js';
import { createPostgresDatabase, onPostgres, openDatabaseAt } from '../support/database.js';

/** The claim function's text as the server holds it. */
async function claimFunction(db: Db): Promise<string> {
  const { rows } = await sql<{ def: string }>`select pg_get_functiondef(p.oid) as def from pg_proc p where p.proname = 'claim_webhook_deliveries'`.execute(db);
  expect(rows).toHaveLength(1);
  return rows[0]!.def;
}

// Migration 041 was changed after it had landed (the throttle's slot 1.1 s -> 1.2 s / rate). A
// PostgreSQL database migrated while it said 1.1 s kept that claim function; migration 045 makes it
// anew. (SQLite's claim is code, not a migration: nothing to check there.)
describe.skipIf(!onPostgres)('migration 045: every PostgreSQL database ends with the same claim function', () => {
  it('a database migrated at 041’s first version (slot 1.1 s / rate) gets the 1.2 s slot of src/webhooks/sql/throttle.ts', async () => {
    const target = await createPostgresDatabase();
    const { db, close } = openDatabaseAt(target.url);
    try {
      // Every migration before 045, then the claim function as 041 first made it: the same text with 1.1 s.
      const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < '045'));
      const { error } = await new Migrator({ db, provider: { getMigrations: async () => before }, allowUnorderedMigrations: true }).migrateToLatest();
      expect(error).toBeUndefined();
      const current = await claimFunction(db);
      expect(current).toContain('ceil(1200.0 / w.rate_limit_per_second)');
      await sql.raw(current.replace('ceil(1200.0 / w.rate_limit_per_second)', 'ceil(1100.0 / w.rate_limit_per_second)')).execute(db);
      expect(await claimFunction(db)).toContain('ceil(1100.0 / w.rate_limit_per_second)');

      // Migration 045 alone (later ones, such as 048's lease table, make the function anew again).
      const upTo045 = Object.fromEntries(Object.entries(migrations).filter(([name]) => name <= '045_claim_slot_spacing'));
      const { results } = await new Migrator({ db, provider: { getMigrations: async () => upTo045 }, allowUnorderedMigrations: true }).migrateToLatest();
      expect(results?.map((r) => [r.migrationName, r.status])).toEqual([['045_claim_slot_spacing', 'Success']]);
      const after = await claimFunction(db);
      expect(after).toContain('ceil(1200.0 / w.rate_limit_per_second)');
      expect(after).not.toContain('1100.0');
      expect(slotSpacingMs(1)).toBe(1200); // the SQLite claim's constant, the same
      // And it is 041's current text: nothing differs.
      expect(after).toBe(current);
    } finally {
      await close();
      await target.drop();
    }
  });
});
