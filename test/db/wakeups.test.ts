import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresWakeups, WAKE_CHANNEL, type Wakeups } from '../../src/db/wakeups.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createPostgresDatabase, onPostgres } from '../support/database.js';

// LISTEN/NOTIFY wake-ups between instances (docs/architecture.md, SQLite and PostgreSQL). PostgreSQL only: without TEST_DATABASE_URL
// the file is skipped (SQLite has one process and wakes in-process).
if (!onPostgres) console.log('wakeups.test.ts: skipped, no TEST_DATABASE_URL (PostgreSQL) set');

/** Resolves at the `n`th call of the returned handler. */
function counter() {
  let count = 0;
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  return {
    handler: () => {
      count += 1;
      for (const w of waiters.filter((w) => count >= w.n)) w.resolve();
    },
    count: () => count,
    reached: (n: number) => new Promise<void>((resolve) => (count >= n ? resolve() : waiters.push({ n, resolve }))),
  };
}

describe.skipIf(!onPostgres)('wake-ups over LISTEN/NOTIFY', () => {
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>;
  let url = '';
  let pool: pg.Pool;
  const instances: Wakeups[] = [];
  const make = (instanceId: string) => {
    const w = createPostgresWakeups({ url, instanceId, logger: silentLogger(), execute: (s) => pool.query(s.text, s.values), reconnectMs: { min: 50, max: 200 } });
    instances.push(w);
    return w;
  };

  beforeAll(async () => {
    database = await createPostgresDatabase();
    url = database.url;
    pool = new pg.Pool({ connectionString: url, max: 2 });
    pool.on('error', () => undefined);
  });
  afterAll(async () => {
    for (const w of instances) await w.close();
    await pool?.end();
    await database?.drop();
  });

  it('a commit on one instance wakes the others, not itself; a burst of publishes coalesces; a dropped listen connection is re-opened', async () => {
    const a = make('a');
    const b = make('b');
    const aDeliveries = counter();
    const bDeliveries = counter();
    const bLaunches = counter();
    a.on('deliveries', aDeliveries.handler);
    b.on('deliveries', bDeliveries.handler);
    b.on('launches', bLaunches.handler);
    await Promise.all([a.start(), b.start()]);

    a.publish('launches');
    await bLaunches.reached(1);
    a.publish('deliveries');
    await bDeliveries.reached(1);
    expect(aDeliveries.count()).toBe(0);
    const bWatches = counter();
    b.on('watches', bWatches.handler);
    a.publish('watches'); // a completed launch's watches: the other instances' watchers look at once
    await bWatches.reached(1);

    // 200 publishes in one go: one NOTIFY in flight and one more queued, not 200 round trips.
    const before = bDeliveries.count();
    for (let i = 0; i < 200; i++) a.publish('deliveries');
    await bDeliveries.reached(before + 1);
    a.publish('launches'); // sent after the burst's NOTIFYs on the same pool: arrives after them
    await bLaunches.reached(2);
    expect(bDeliveries.count() - before).toBeGreaterThanOrEqual(1);
    expect(bDeliveries.count() - before).toBeLessThanOrEqual(2);

    // The server drops every listen connection: each instance re-opens its own and looks for work at once.
    const woken = bDeliveries.count();
    await pool.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query = $1 and pid <> pg_backend_pid()`, [`listen ${WAKE_CHANNEL}`]);
    await bDeliveries.reached(woken + 1);
    a.publish('launches');
    await bLaunches.reached(3);
  });
});
