import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { settleAttempt } from '../../src/webhooks/settle.js';
import { claimDueDeliveries } from '../../src/webhooks/sql/claimDeliveries.js';
import { captureLogger, commitEvents, createTestDb, insertLaunch, newSecretBox, startReceiver, engineConfig, type Receiver, type TestDb } from '../support/webhooks.js';

async function waitFor(predicate: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('dispatcher loop', () => {
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

  it('wakes at once on notify() instead of waiting for the next poll', async () => {
    const engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig({ webhooks: { pollIntervalMs: 60_000 } }), secretBox: box });
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box });
    engine.start();
    await engine.dispatcher.runOnce(); // the loop's first pass is over; it now sleeps for a minute
    await commitEvents(tdb.db, clock, launchId, 1);
    const t0 = performance.now();
    engine.signal.notify();
    await waitFor(() => receiver.requests.length === 1, 1_000);
    expect(performance.now() - t0).toBeLessThan(1_000);
    await engine.stop();
  });

  it('stop() waits for in-flight attempts to settle', async () => {
    const engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig(), secretBox: box });
    receiver.respond = () => ({ status: 200, delayMs: 300 });
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box });
    await commitEvents(tdb.db, clock, launchId, 2);
    engine.start();
    await waitFor(() => receiver.requests.length === 2);
    await engine.stop();
    const rows = await tdb.db.selectFrom('deliveries').select(['status', 'lease_owner']).execute();
    expect(rows).toEqual([
      { status: 'delivered', lease_owner: null },
      { status: 'delivered', lease_owner: null },
    ]);
  });

  it('keeps at most maxInFlight attempts in flight across all hosts', async () => {
    const other = await startReceiver(clock);
    receiver.respond = () => 'hang';
    other.respond = () => 'hang';
    const engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig({ webhooks: { maxInFlight: 3, maxInFlightPerHost: 10, timeoutMs: 400 } }), secretBox: box });
    try {
      await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box }), 5);
      await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: other.url, secret: 's', box }), 5);
      engine.start();
      await waitFor(() => receiver.requests.length + other.requests.length === 3);
      expect(engine.dispatcher.inFlight()).toBe(3);
      await new Promise((r) => setTimeout(r, 100));
      expect(receiver.requests.length + other.requests.length).toBe(3);
    } finally {
      await engine.stop();
      await other.close();
    }
  });

  it('backs off when the database fails instead of spinning', async () => {
    const broken = openDatabase(`${tdb.dir}/broken.sqlite`); // never migrated: every claim fails
    const { logger, lines } = captureLogger();
    const engine = createWebhookEngine({ db: broken.db, clock, logger, config: engineConfig({ webhooks: { pollIntervalMs: 20 } }), secretBox: box });
    engine.start();
    await new Promise((r) => setTimeout(r, 600));
    engine.signal.notify();
    await engine.stop();
    await broken.close();
    const failures = lines.filter((l) => l.includes('claiming webhook deliveries failed')).length;
    // 20 ms polling would give ~30 passes; backoff (40, 80, 160, 320 ms…) allows about five.
    expect(failures).toBeGreaterThanOrEqual(2);
    expect(failures).toBeLessThanOrEqual(7);
  });
});

describe('leases', () => {
  let tdb: TestDb;
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const box = newSecretBox();
  beforeEach(async () => {
    tdb = await createTestDb();
  });
  afterEach(async () => {
    await tdb.close();
  });
  const claim = (owner: string, extra: Partial<Parameters<typeof claimDueDeliveries>[1]> = {}) =>
    claimDueDeliveries(tdb.db, { owner, now: clock.now(), leaseMs: 60_000, limit: 10, perHostCap: 10, excludeEndpoints: [], maxAttempts: 5, ...extra });
  const ok = { ok: true, statusCode: 200, durationMs: 1, responseBody: '', errorClass: null, errorMessage: null };

  it('reclaims an expired lease, and only the current lease holder can settle', async () => {
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: 'https://hooks.example.com/a', secret: 's', box }), 1);
    const [mine] = await claim('A');
    expect(mine).toMatchObject({ lease_owner: 'A', attempt_count: 1, lease_expires_at: clock.now() + 60_000 });
    expect(await claim('B')).toEqual([]);
    clock.advance(60_000);
    const [theirs] = await claim('B');
    expect(theirs).toMatchObject({ id: mine!.id, lease_owner: 'B', attempt_count: 2 });

    const settle = (owner: string, row: typeof mine) =>
      settleAttempt(tdb.db, { delivery: row!, owner, launchOwner: 'acme', outcome: ok, startedAt: clock.now(), now: clock.now(), schedule: [0, 30_000] });
    expect(await settle('A', mine)).toBe('lease_lost');
    expect(await tdb.db.selectFrom('delivery_attempts').selectAll().execute()).toEqual([]);
    expect(await settle('B', theirs)).toBe('delivered');
    expect(await tdb.db.selectFrom('delivery_attempts').select('attempt').execute()).toEqual([{ attempt: 2 }]);
  });

  it('counts live leases of every dispatcher against the per-host cap and skips excluded endpoints', async () => {
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: 'https://a.example.com/h', secret: 's', box }), 5);
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: 'https://b.example.com/h', secret: 's', box }), 5);
    const first = await claim('A', { perHostCap: 2 });
    expect(first.map((r) => r.host).sort()).toEqual(['a.example.com', 'a.example.com', 'b.example.com', 'b.example.com']);
    expect(await claim('B', { perHostCap: 2 })).toEqual([]);
    expect((await claim('B', { perHostCap: 3, excludeEndpoints: ['https://a.example.com:443/h'] })).map((r) => r.host)).toEqual(['b.example.com']);
    expect(await claim('C', { perHostCap: 10, limit: 2, onlyHost: 'a.example.com' })).toHaveLength(2);
  });
});
