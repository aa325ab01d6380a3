import { describe, expect, it } from 'vitest';
import { migrateToLatest, openPostgres } from '../../src/db/database.js';
import { migrationProvider } from '../../src/db/migrations/index.js';
import { createPostgresDatabase, onPostgres } from '../support/database.js';

// Several instances started at once on a new PostgreSQL database each migrate it at start
// (docs/architecture.md, "Shared and per instance"): the migrator's lock lets one run each
// migration and the others find it done.
describe.skipIf(!onPostgres)('instances that start at the same moment on a new database', () => {
  it('migrate it once between them: every start succeeds and each migration runs exactly once', async () => {
    const fresh = await createPostgresDatabase();
    const instances = Array.from({ length: 4 }, () => openPostgres(fresh.url, { poolSize: 2 }));
    try {
      const applied = await Promise.all(instances.map((i) => migrateToLatest(i.db)));
      const all = Object.keys(await migrationProvider.getMigrations()).sort();
      expect(applied.flat().sort()).toEqual(all);
      const rows = await instances[0]!.db.selectFrom('kysely_migration' as never).select('name' as never).execute();
      expect(rows).toHaveLength(all.length);
      // A later start finds nothing to do.
      expect(await migrateToLatest(instances[1]!.db)).toEqual([]);
    } finally {
      for (const i of instances) await i.close();
      await fresh.drop();
    }
  });
});
