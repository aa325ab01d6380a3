import { refuseInserts } from '../support/database.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { createSettleBatcher } from '../../src/webhooks/settleBatcher.js';
import { claimDueDeliveries } from '../../src/webhooks/sql/claimDeliveries.js';
import { commitEvents, createTestDb, insertLaunch, newSecretBox, type TestDb } from '../support/webhooks.js';

describe('settling attempts in shared transactions', () => {
  const clock = manualClock();
  const box = newSecretBox();
  let tdb: TestDb;
  beforeEach(async () => {
    tdb = await createTestDb();
  });
  afterEach(async () => tdb.close());

  const ok = { ok: true, statusCode: 200, durationMs: 1, responseBody: '', errorClass: null, errorMessage: null };
  const claimAll = () => claimDueDeliveries(tdb.db, { owner: 'A', now: clock.now(), leaseMs: 60_000, limit: 10, perHostCap: 10, excludeEndpoints: [], maxAttempts: 5 });
  const input = (row: Awaited<ReturnType<typeof claimAll>>[number]) => ({ delivery: row, owner: 'A', launchOwner: 'acme', outcome: ok, startedAt: clock.now(), now: clock.now(), schedule: [0, 30_000] });

  it('settles attempts finished together, each with its state and attempt log', async () => {
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: 'https://hooks.example.com/a', secret: 's', box }), 3);
    const rows = await claimAll();
    const batcher = createSettleBatcher(tdb.db);
    expect(await Promise.all(rows.map((row) => batcher.settle(input(row))))).toEqual(['delivered', 'delivered', 'delivered']);
    const settled = await tdb.db.selectFrom('deliveries').select(['status', 'lease_owner']).execute();
    expect(settled).toEqual(Array(3).fill({ status: 'delivered', lease_owner: null }));
    expect(await tdb.db.selectFrom('delivery_attempts').selectAll().execute()).toHaveLength(3);
  });

  it('settles the neighbours of a poisoned item: only the item whose writes fail stays leased, to be claimed again', async () => {
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: 'https://hooks.example.com/a', secret: 's', box }), 3);
    const rows = await claimAll();
    // Make the attempt-log insert of one delivery fail inside the shared transaction.
    await refuseInserts(tdb.db, 'delivery_attempts', { column: 'delivery_id', value: rows[1]!.id });
    const batcher = createSettleBatcher(tdb.db);
    const results = await Promise.allSettled(rows.map((row) => batcher.settle(input(row))));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const after = await tdb.db.selectFrom('deliveries').select(['id', 'status', 'lease_owner']).execute();
    const byId = new Map(after.map((r) => [r.id, r]));
    expect(byId.get(rows[0]!.id)).toMatchObject({ status: 'delivered', lease_owner: null });
    expect(byId.get(rows[1]!.id)).toMatchObject({ status: 'pending', lease_owner: 'A' });
    expect(byId.get(rows[2]!.id)).toMatchObject({ status: 'delivered', lease_owner: null });
    const logged = await tdb.db.selectFrom('delivery_attempts').select('delivery_id').execute();
    expect(logged.map((r) => r.delivery_id).sort()).toEqual([rows[0]!.id, rows[2]!.id].sort());
    clock.advance(60_000);
    const again = await claimDueDeliveries(tdb.db, { owner: 'B', now: clock.now(), leaseMs: 60_000, limit: 10, perHostCap: 10, excludeEndpoints: [], maxAttempts: 5 });
    expect(again.map((r) => r.id)).toEqual([rows[1]!.id]);
  });
});
