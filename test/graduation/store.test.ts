import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/lib/clock.js';
import { claimDueMigrations, completeMigration, insertCurveMigration, markMigrationDue, MigrationFencedError, pendingOf, presentMigration, recordMigrationPending } from '../../src/watcher/graduation/store.js';
import { curveOutcome } from '../../src/watcher/handlers.js';
import { createTestDb, insertLaunch, newSecretBox, type TestDb } from '../support/webhooks.js';

// The graduation record's claim, fence and transitions on the real database (SQLite, or PostgreSQL
// with TEST_DATABASE_URL); needs no program binaries, so it runs in CI.
const PENDING = { signature: 'sig1', blockhash: 'bh', lastValidBlockHeight: 10, serialized: 'AA==' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the graduation record (curve_migrations)', () => {
  let t: TestDb;
  let launchId: string;
  beforeEach(async () => {
    t = await createTestDb();
    launchId = await insertLaunch(t.db, systemClock, { url: 'http://127.0.0.1:9/h', secret: 'whsec_x', box: newSecretBox() });
  });
  afterEach(async () => t.close());

  it('is claimed by one job at a time once due, and a job whose lease was taken over can neither record nor complete', async () => {
    const now = Date.now();
    await insertCurveMigration(t.db, { launchId, owner: 'acme', pool: 'Pool1', thresholdLamports: '80000000000', now });
    await insertCurveMigration(t.db, { launchId, owner: 'acme', pool: 'Pool1', thresholdLamports: '80000000000', now });
    expect(await claimDueMigrations(t.db, { owner: 'a', now, leaseMs: 60_000, limit: 4 })).toEqual([]);
    expect(await markMigrationDue(t.db, launchId, now)).toBe(true);
    expect(await markMigrationDue(t.db, launchId, now)).toBe(false);

    // Two jobs at the same moment: one gets it.
    const [a, b] = await Promise.all([claimDueMigrations(t.db, { owner: 'a', now: Date.now(), leaseMs: 300, limit: 4 }), claimDueMigrations(t.db, { owner: 'b', now: Date.now(), leaseMs: 300, limit: 4 })]);
    expect(a.length + b.length).toBe(1);
    const first = [...a, ...b][0]!;
    expect(await claimDueMigrations(t.db, { owner: 'c', now: Date.now(), leaseMs: 60_000, limit: 4 })).toEqual([]);
    await recordMigrationPending(t.db, first, { migration_damm_v2: PENDING }, Date.now());

    // Its lease expires (the database's clock on PostgreSQL): another job takes it over, with the recorded transaction.
    await sleep(400);
    const [second] = await claimDueMigrations(t.db, { owner: 'c', now: Date.now(), leaseMs: 60_000, limit: 4 });
    expect(second).toBeDefined();
    expect(Number(second!.fence)).toBe(Number(first.fence) + 1);
    expect(pendingOf(second!)).toEqual({ migration_damm_v2: PENDING });
    await expect(recordMigrationPending(t.db, first, { migration_damm_v2: { ...PENDING, signature: 'sig2' } }, Date.now())).rejects.toBeInstanceOf(MigrationFencedError);
    await expect(t.db.transaction().execute((trx) => completeMigration(trx, first, { signature: 'sig1', ammPool: 'Amm1', result: {}, now: Date.now() }))).rejects.toBeInstanceOf(MigrationFencedError);

    await t.db.transaction().execute((trx) => completeMigration(trx, second!, { signature: 'sig1', ammPool: 'Amm1', result: { positions: [{ address: 'Pos1' }] }, now: Date.now() }));
    expect(await presentMigration(t.db, launchId)).toMatchObject({ state: 'done', ammPool: 'Amm1', signature: 'sig1', positions: [{ address: 'Pos1' }], attempts: 2, lastError: null });
    await sleep(5);
    expect(await claimDueMigrations(t.db, { owner: 'd', now: Date.now(), leaseMs: 60_000, limit: 4 })).toEqual([]);
    expect(await markMigrationDue(t.db, launchId, Date.now())).toBe(false);
  });
});

describe('what a curve watch makes of the curve it reads', () => {
  const watch = { address: 'Curve1', launchId: 'lch_1', context: { thresholdLamports: '80000000000' } };
  const at = (lamports: bigint, migrationProgress = 0, isMigrated = false) => curveOutcome(watch, { quoteReserve: lamports, migrationProgress, isMigrated });

  it('reports each mark reached (25, 50, 75 % of the threshold) keyed on the curve and the percent, and makes a full curve due', () => {
    expect(at(19_999_999_999n).events).toEqual([]);
    const half = at(40_000_000_000n);
    expect(half.events.map((e) => [e.event, e.signature, e.instructionIndex, e.data.percent])).toEqual([
      ['pool.progress', 'Curve1', 25, 25],
      ['pool.progress', 'Curve1', 50, 50],
    ]);
    expect(half.events[1]!.data).toEqual({ pool: 'Curve1', percent: 50, quoteReserveLamports: '40000000000', thresholdLamports: '80000000000' });
    expect(half.apply).toBeUndefined();
    const full = at(80_000_000_000n, 2);
    expect(full.events.map((e) => e.instructionIndex)).toEqual([25, 50, 75]);
    expect(full.apply).toBeDefined();
    expect(full.end).toBeUndefined();
    const migrated = at(0n, 3, true);
    expect(migrated.events).toEqual([]);
    expect(migrated.end).toBe('graduated');
    expect(migrated.apply).toBeDefined();
  });
});
