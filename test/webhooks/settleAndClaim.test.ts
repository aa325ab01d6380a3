import SqliteDatabase from 'better-sqlite3';
import { onPostgres, passLeaseTime, refuseInserts } from '../support/database.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { createEndpoint } from '../../src/webhooks/endpoints/endpoints.js';
import { settleAndClaim } from '../../src/webhooks/settleAndClaim.js';
import { claimDueDeliveries } from '../../src/webhooks/sql/claimDeliveries.js';
import { commitEvents, createTestDb, insertLaunch, newSecretBox, type TestDb } from '../support/webhooks.js';

describe('settling attempts and claiming in one transaction', () => {
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
    const out = await settleAndClaim(tdb.db, { settles: rows.map(input) });
    expect(out.results).toEqual(['delivered', 'delivered', 'delivered']);
    const settled = await tdb.db.selectFrom('deliveries').select(['status', 'lease_owner']).execute();
    expect(settled).toEqual(Array(3).fill({ status: 'delivered', lease_owner: null }));
    expect(await tdb.db.selectFrom('delivery_attempts').selectAll().execute()).toHaveLength(3);
  });

  it('settles the neighbours of a poisoned item: only the item whose writes fail stays leased, to be claimed again', async () => {
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: 'https://hooks.example.com/a', secret: 's', box }), 3);
    const rows = await claimAll();
    // Make the attempt-log insert of one delivery fail inside the shared transaction.
    await refuseInserts(tdb.db, 'delivery_attempts', { column: 'delivery_id', value: rows[1]!.id });
    const claim = { owner: 'A', now: clock.now(), leaseMs: 60_000, limit: 10, perHostCap: 10, excludeEndpoints: [], maxAttempts: 5 };
    const out = await settleAndClaim(tdb.db, { settles: rows.map(input), claims: [claim] });
    expect(out.results.map((r) => (r instanceof Error ? 'failed alone' : r))).toEqual(['delivered', 'failed alone', 'delivered']);
    expect(out.error).toBeDefined();
    expect(out.claimed).toEqual([[]]); // nothing is claimed when the shared transaction failed
    const after = await tdb.db.selectFrom('deliveries').select(['id', 'status', 'lease_owner']).execute();
    const byId = new Map(after.map((r) => [r.id, r]));
    expect(byId.get(rows[0]!.id)).toMatchObject({ status: 'delivered', lease_owner: null });
    expect(byId.get(rows[1]!.id)).toMatchObject({ status: 'pending', lease_owner: 'A' });
    expect(byId.get(rows[2]!.id)).toMatchObject({ status: 'delivered', lease_owner: null });
    const logged = await tdb.db.selectFrom('delivery_attempts').select('delivery_id').execute();
    expect(logged.map((r) => r.delivery_id).sort()).toEqual([rows[0]!.id, rows[2]!.id].sort());
    await passLeaseTime(tdb.db, clock, 60_000);
    const again = await claimDueDeliveries(tdb.db, { owner: 'B', now: clock.now(), leaseMs: 60_000, limit: 10, perHostCap: 10, excludeEndpoints: [], maxAttempts: 5 });
    expect(again.map((r) => r.id)).toEqual([rows[1]!.id]);
  });

  it('claims in the same transaction as the settles, counting the slots they freed, with everything an attempt needs', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url: 'https://hooks.example.com/a', secret: 's', box });
    await commitEvents(tdb.db, clock, launchId, 3);
    // A per-host cap of 2: two are claimed, the third waits for a slot.
    const cap2 = () => ({ owner: 'A', now: clock.now(), leaseMs: 60_000, limit: 10, perHostCap: 2, excludeEndpoints: [], maxAttempts: 5 });
    const first = await settleAndClaim(tdb.db, { settles: [], claims: [cap2()] });
    expect(first.claimed[0]).toHaveLength(2);
    const [a, b] = first.claimed[0]!;
    expect(a).toMatchObject({ url: 'https://hooks.example.com/a', attempt: 1, ctx: { launchId, owner: 'acme', event: expect.any(String) as string } });
    expect(JSON.parse(a!.ctx.body)).toMatchObject({ id: a!.eventId, launchId });
    expect(box.open(a!.ctx.secretSealed)).toBe('s');
    const settleOf = (c: typeof a) => ({ ...input({ id: c!.id, launch_id: c!.launchId, event_id: c!.eventId, attempt_count: c!.attempt, lease_token: c!.token } as never) });
    // Settling one frees one slot of the host: the claim in the same transaction takes the third.
    const second = await settleAndClaim(tdb.db, { settles: [settleOf(a)], claims: [cap2()] });
    expect(second.results).toEqual(['delivered']);
    expect(second.claimed[0]!.map((c) => c.id)).not.toContain(b!.id);
    expect(second.claimed[0]).toHaveLength(1);
    expect(await tdb.db.selectFrom('delivery_attempts').select('delivery_id').execute()).toEqual([{ delivery_id: a!.id }]);
  });
  it('ends the failing run of each webhook endpoint a settled success went to, and of no other', async () => {
    const now = clock.now();
    const endpoint = (id: string) => ({ id, owner: 'acme', url: `https://${id}.example.com/hook`, description: null, events: '["*"]', signature_scheme: 'service' as const, secret_enc: box.seal('whsec_endpoint'), previous_secret_enc: null, previous_secret_expires_at: null, disabled_at: null, disabled_reason: null, failing_since: now - 60_000, created_at: now, updated_at: now });
    await tdb.db.insertInto('webhook_endpoints').values([endpoint('we_ok'), endpoint('we_lost'), endpoint('we_other')]).execute();
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: 'https://hooks.example.com/a', secret: 's', box }), 2);
    const [first, second] = await claimAll();
    // The second's lease was lost to a newer claim: its success is not this dispatcher's to settle.
    const lost = { ...input(second!), delivery: { ...second!, lease_token: second!.lease_token - 1 }, endpointId: 'we_lost' };
    const out = await settleAndClaim(tdb.db, { settles: [{ ...input(first!), endpointId: 'we_ok' }, lost] });
    expect(out.results).toEqual(['delivered', 'lease_lost']);
    const rows = await tdb.db.selectFrom('webhook_endpoints').select(['id', 'failing_since']).orderBy('id').execute();
    expect(rows).toEqual([
      { id: 'we_lost', failing_since: now - 60_000 },
      { id: 'we_ok', failing_since: null },
      { id: 'we_other', failing_since: now - 60_000 },
    ]);
  });

  it.skipIf(onPostgres)('SQLite: the lane read tests the ordering of a launch\'s events only while some endpoint orders them', async () => {
    // The SQL texts of the lane reads run while `body` runs (better-sqlite3's statements, probed).
    async function laneReads(body: () => Promise<unknown>): Promise<string[]> {
      const probe = new SqliteDatabase(':memory:');
      const proto = Object.getPrototypeOf(probe.prepare('select 1')) as { all: (...args: unknown[]) => unknown };
      probe.close();
      const original = proto.all;
      const seen: string[] = [];
      proto.all = function (this: { source: string }, ...args: unknown[]) {
        if (this.source.includes('select y.id, y.endpoint_id from deliveries y')) seen.push(this.source);
        return original.apply(this, args);
      };
      try {
        await body();
      } finally {
        proto.all = original;
      }
      return seen;
    }
    const launchId = await insertLaunch(tdb.db, clock, { url: 'https://hooks.example.com/a', secret: 's', box });
    await commitEvents(tdb.db, clock, launchId, 2);
    const plain = await laneReads(() => claimAll());
    expect(plain).toHaveLength(1);
    expect(plain[0]).not.toContain('pe.sequence');
    await createEndpoint({ db: tdb.db, clock, secretBox: box }, 'acme', { url: 'https://hooks.example.com/ordered', events: ['launch.step_complete'], description: null, signatureScheme: 'service', ordering: 'launch' });
    await commitEvents(tdb.db, clock, launchId, 2);
    let claimed: Awaited<ReturnType<typeof claimAll>> = [];
    const withOrdered = await laneReads(async () => (claimed = await claimAll()));
    expect(withOrdered.length).toBeGreaterThan(0);
    for (const text of withOrdered) expect(text).toContain('pe.sequence');
    // The ordered endpoint gets the earlier of the two new events only (the later one waits for it).
    const toOrdered = claimed.filter((r) => r.url === 'https://hooks.example.com/ordered');
    expect(toOrdered).toHaveLength(1);
  });
});
