import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createBreakerRegistry } from '../../src/webhooks/breakerRegistry.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { settleAttempt } from '../../src/webhooks/settle.js';
import { passLeaseTime, refuseInserts } from '../support/database.js';
import { claimDueDeliveries } from '../../src/webhooks/sql/claimDeliveries.js';
import { commitEvents, createTestDb, insertLaunch, newSecretBox, startReceiver, engineConfig, type Receiver, type TestDb } from '../support/webhooks.js';

const LEASE_MS = 60_000;
const ok = { ok: true, statusCode: 200, durationMs: 1, responseBody: '', errorClass: null, errorMessage: null };

describe('fenced delivery leases and exact attempts', () => {
  let tdb: TestDb;
  let receiver: Receiver;
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const box = newSecretBox();
  beforeEach(async () => {
    tdb = await createTestDb();
    receiver = await startReceiver(clock);
  });
  afterEach(async () => {
    await receiver.close();
    await tdb.close();
  });

  it('a stale attempt cannot settle over a newer claim, even one by the same dispatcher', async () => {
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: 'https://hooks.example.com/a', secret: 's', box }), 1);
    const claim = () => claimDueDeliveries(tdb.db, { owner: 'A', now: clock.now(), leaseMs: LEASE_MS, limit: 10, perHostCap: 10, excludeEndpoints: [], maxAttempts: 5 });
    const [stale] = await claim();
    await passLeaseTime(tdb.db, clock, 2 * LEASE_MS);
    const [fresh] = await claim();
    expect(fresh).toMatchObject({ id: stale!.id, lease_owner: 'A', attempt_count: 2 });
    expect(fresh!.lease_token).toBeGreaterThan(stale!.lease_token);
    const settle = (row: typeof stale) =>
      settleAttempt(tdb.db, { delivery: row!, owner: 'A', launchOwner: 'acme', outcome: ok, startedAt: clock.now(), now: clock.now(), schedule: [0, 30_000] });
    expect(await settle(stale)).toBe('lease_lost');
    expect(await tdb.db.selectFrom('deliveries').select(['status', 'lease_owner']).executeTakeFirst()).toEqual({ status: 'pending', lease_owner: 'A' });
    expect(await settle(fresh)).toBe('delivered');
    expect(await tdb.db.selectFrom('delivery_attempts').select('attempt').execute()).toEqual([{ attempt: 2 }]);
  });

  it('a dispatcher does not claim a delivery it is still attempting after a clock jump of twice the lease', async () => {
    const engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig({ webhooks: { leaseMs: LEASE_MS } }), secretBox: box });
    let arrived: () => void = () => undefined;
    const arrival = new Promise<void>((resolve) => (arrived = resolve));
    receiver.respond = () => {
      arrived();
      return { status: 200, delayMs: 400 };
    };
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box }), 1);
    const first = engine.dispatcher.runOnce();
    await arrival;
    await passLeaseTime(tdb.db, clock, 2 * LEASE_MS);
    expect(await engine.dispatcher.runOnce()).toBe(0);
    expect(receiver.requests).toHaveLength(1);
    await first;
    await engine.stop();
    expect(receiver.requests).toHaveLength(1);
    expect(await tdb.db.selectFrom('delivery_attempts').select('attempt').execute()).toEqual([{ attempt: 1 }]);
  });

  it('a failed settle never yields a 6th attempt: the delivery ends failed with a dead letter after exactly 5 sends', async () => {
    const engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig({ webhooks: { leaseMs: LEASE_MS } }), secretBox: box });
    receiver.respond = () => ({ status: 500 });
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box }), 1);
    // Every settle fails: the attempt log refuses the insert, so no attempt is ever settled.
    await refuseInserts(tdb.db, 'delivery_attempts');
    for (let round = 0; round < 10; round++) {
      await engine.dispatcher.runOnce();
      await passLeaseTime(tdb.db, clock, LEASE_MS + 3_600_000);
    }
    await engine.dispatcher.runOnce();
    await engine.stop();
    expect(receiver.requests.map((r) => r.headers['x-service-attempt'])).toEqual(['1', '2', '3', '4', '5']);
    const delivery = await tdb.db.selectFrom('deliveries').selectAll().executeTakeFirstOrThrow();
    expect(delivery).toMatchObject({ status: 'failed', attempt_count: 5, lease_owner: null });
    const dead = await tdb.db.selectFrom('dead_letters').selectAll().execute();
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ kind: 'delivery', delivery_id: delivery.id, error_code: 'delivery_failed', status: 'open' });
    expect(dead[0]!.error_message).toMatch(/^5 attempts made/);
  });

  it('a breaker load that failed is tried again by the next claim instead of being cached', async () => {
    await tdb.db.insertInto('endpoint_breakers').values({ endpoint: 'https://down.example.com:443/hook', host: 'down.example.com', state: 'open', failures: 3, opened_at: clock.now(), updated_at: clock.now() }).execute();
    const breakers = createBreakerRegistry({ db: tdb.db, clock, logger: silentLogger(), policy: { failureThreshold: 3, resetTimeoutMs: 300_000 } });
    await sql`alter table endpoint_breakers rename to endpoint_breakers_away`.execute(tdb.db);
    await expect(breakers.load()).rejects.toThrow();
    await sql`alter table endpoint_breakers_away rename to endpoint_breakers`.execute(tdb.db);
    await breakers.load();
    expect(breakers.blockedEndpoints()).toEqual(['https://down.example.com:443/hook']);
    breakers.shutdown();
  });
});
