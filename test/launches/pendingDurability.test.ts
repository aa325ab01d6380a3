import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { claimLaunch, leaseOf, savePendingTx } from '../../src/launches/runStore.js';
import { onPostgres } from '../support/database.js';
import { startTestService, type TestService } from '../support/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

// SQLite only: on PostgreSQL a pending record is an ordinary durable commit.
describe.skipIf(onPostgres)('a pending transaction recorded with full durability on SQLite', () => {
  it('is committed before the WAL sync starts, and the step waits for the sync before it may send', async () => {
    t = await startTestService();
    const key = await t.key('acme', ['launches:write']);
    const launchId = await t.createLaunch(key);
    const launch = await claimLaunch(t.service.db, { owner: 'runner-test', now: Date.now(), leaseMs: 60_000 });
    expect(launch?.id).toBe(launchId);
    const lease = leaseOf(launch!);

    // Another connection, as the disk would see it after the sync: the record must already be there.
    const reader = openDatabase(t.config.databasePath, { backgroundCheckpoint: false });
    let seenAtSync: string | null | undefined;
    let finishSync!: () => void;
    const save = savePendingTx(t.service.db, lease, {
      step: 'create_mint',
      pending: { mint: { signature: 'sigA', bytes: 'AA==' } },
      durability: 'full',
      sync: async () => {
        const row = await reader.db.selectFrom('launch_steps').select('pending_tx').where('launch_id', '=', launchId).where('name', '=', 'create_mint').executeTakeFirst();
        seenAtSync = row?.pending_tx;
        await new Promise<void>((resolve) => (finishSync = resolve));
      },
    });
    let saved = false;
    void save.then(() => (saved = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(JSON.parse(seenAtSync ?? 'null')).toEqual({ mint: { signature: 'sigA', bytes: 'AA==' } });
    expect(saved).toBe(false);
    finishSync();
    await save;
    expect(saved).toBe(true);
    await reader.close();
  });
});
