import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { WAKE_CHANNEL } from '../../src/db/wakeups.js';
import { onPostgres, testDatabaseUrl } from '../support/database.js';
import { startTestService, type TestService } from '../support/service.js';

// A completed launch wakes the chain watchers (its own and, through NOTIFY, every other instance's)
// only when its completion made watches: a watcher turn with nothing due is still a claim
// transaction, and a token launch without vesting, DAO or pool makes none (docs/watcher.md). The
// cross-instance wake-up is what other instances observe, so it is what this test listens to.
describe.skipIf(!onPostgres)('PostgreSQL: watcher wake-ups after a completed launch', () => {
  let t: TestService | undefined;
  let listener: pg.Client | undefined;
  afterEach(async () => {
    await listener?.end();
    await t?.close();
    listener = undefined;
    t = undefined;
  });

  it('a launch that made no watches publishes no watches wake-up when it completes', async () => {
    t = await startTestService();
    listener = new pg.Client({ connectionString: t.config.postgres!.url ?? testDatabaseUrl });
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (n) => heard.push(n.payload ?? ''));
    await listener.query(`listen ${WAKE_CHANNEL}`);
    t.service.start();
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const id = await t.createLaunch(key);
    for (let waited = 0; ; waited += 50) {
      const row = await t.service.db.selectFrom('launches').select('status').where('id', '=', id).executeTakeFirstOrThrow();
      if (row.status === 'complete') break;
      if (row.status === 'failed' || waited > 60_000) throw new Error(`launch ${id} is ${row.status}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // A notification sent at the completion's commit arrives within milliseconds; wait well past it.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(heard.some((p) => p.startsWith('launches:'))).toBe(true);
    expect(heard.filter((p) => p.startsWith('watches:'))).toEqual([]);
    expect((await sql`select id from watches where launch_id = ${id}`.execute(t.service.db)).rows).toEqual([]);
  });
});
