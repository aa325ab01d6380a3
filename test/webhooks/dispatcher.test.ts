import SqliteDatabase from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { manualClock } from '../../src/lib/clock.js';
import { onPostgres, passLeaseTime } from '../support/database.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createBreakerRegistry } from '../../src/webhooks/breakerRegistry.js';
import { createDispatcher } from '../../src/webhooks/dispatcher.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { createWebhookHttpClient } from '../../src/webhooks/httpClient.js';
import { settleAttempt } from '../../src/webhooks/settle.js';
import { claimDueDeliveries } from '../../src/webhooks/sql/claimDeliveries.js';
import { captureLogger, commitEvents, createTestDb, insertLaunch, newSecretBox, startReceiver, engineConfig, type Receiver, type TestDb } from '../support/webhooks.js';

/** Polls for a condition; the deadline is generous (a loaded CI machine stalls the loop for seconds), the tests' bounds are separate. */
async function waitFor(predicate: () => boolean, timeoutMs = 20_000): Promise<void> {
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
    // Woken, not polled: the poll is 60 s away, so anything under half of it can only be the wake
    // (a bound of 1 s failed on a loaded machine without proving more).
    await waitFor(() => receiver.requests.length === 1, 30_000);
    expect(performance.now() - t0).toBeLessThan(30_000);
    await engine.stop();
  });

  describe('turns that only settle (SQLite: this process adds every delivery it could claim)', () => {
    /** Counts the claim's lane walks run while `body` runs (every statement goes through better-sqlite3's Statement). */
    async function countingHostWalks(body: () => Promise<void>): Promise<number> {
      const probe = new SqliteDatabase(':memory:');
      const proto = Object.getPrototypeOf(probe.prepare('select 1')) as Record<'all' | 'run' | 'get', (...args: unknown[]) => unknown>;
      probe.close();
      const originals = { all: proto.all, run: proto.run, get: proto.get };
      let walks = 0;
      for (const method of ['all', 'run', 'get'] as const) {
        const original = originals[method];
        proto[method] = function (this: { source: string }, ...args: unknown[]) {
          if (this.source.includes('with recursive endpoints')) walks += 1;
          return original.apply(this, args);
        };
      }
      try {
        await body();
      } finally {
        Object.assign(proto, originals);
      }
      return walks;
    }

    it.skipIf(onPostgres)('skip the claim when nothing was committed since the last one took everything', async () => {
      // A calm event loop: on a loaded machine the real monitor reports the loop busy, the claims are
      // throttled (cut short, so the table stays worth searching), and that is another test's subject.
      const calm = { maxSince: () => 0, busy: () => false, stop: () => undefined };
      const engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig({ webhooks: { pollIntervalMs: 60_000 } }), secretBox: box, loopLag: calm });
      const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box });
      engine.start();
      await engine.dispatcher.runOnce();
      const walks = await countingHostWalks(async () => {
        for (let i = 0; i < 3; i++) {
          await commitEvents(tdb.db, clock, launchId, 1);
          engine.signal.notify();
          await waitFor(() => receiver.requests.length === i + 1);
          await waitFor(() => engine.dispatcher.inFlight() === 0);
          await new Promise((r) => setTimeout(r, 20)); // the settle turn has run
        }
      });
      const rows = await tdb.db.selectFrom('deliveries').select(['status']).execute();
      await engine.stop();
      expect(rows).toEqual([{ status: 'delivered' }, { status: 'delivered' }, { status: 'delivered' }]);
      // One claim per notify(); the three settle turns claimed nothing, so they did not look.
      expect(walks).toBe(3);
    });

    it('still claim while a host is at its cap: a backlog to one host drains without waiting for the poll', async () => {
      const engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig({ webhooks: { pollIntervalMs: 60_000, maxInFlightPerHost: 2 } }), secretBox: box });
      receiver.respond = () => ({ status: 200, delayMs: 20 });
      const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box });
      engine.start();
      await engine.dispatcher.runOnce();
      await commitEvents(tdb.db, clock, launchId, 8);
      engine.signal.notify();
      await waitFor(() => receiver.requests.length === 8);
      await engine.stop();
    });

    it('claim a retry that is due at once right after the turn that settled its failure, without waiting for the poll', async () => {
      const engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig({ webhooks: { pollIntervalMs: 60_000, retrySchedule: [0, 0, 0] } }), secretBox: box });
      receiver.respond = () => (receiver.requests.length === 1 ? { status: 500 } : { status: 200 });
      const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box });
      engine.start();
      await engine.dispatcher.runOnce();
      await commitEvents(tdb.db, clock, launchId, 1);
      engine.signal.notify();
      await waitFor(() => receiver.requests.length === 2);
      await waitFor(() => engine.dispatcher.inFlight() === 0);
      await engine.stop();
      expect(receiver.requests.map((r) => r.headers['x-service-attempt'])).toEqual(['1', '2']);
    });
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

  it('a delivery claimed again in the turn that settled its failed attempt stays held: stop() waits for its new attempt', async () => {
    // A retry due at once: the turn that settles the failure claims the same delivery again, while
    // the first attempt's item is still finishing. Its finish must not drop the new attempt.
    const engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig({ webhooks: { retrySchedule: [0, 0, 0] } }), secretBox: box });
    receiver.respond = () => (receiver.requests.length === 1 ? { status: 500 } : { status: 200, delayMs: 300 });
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box }), 1);
    engine.start();
    await waitFor(() => receiver.requests.length === 2);
    expect(engine.dispatcher.inFlight()).toBe(1);
    expect(await engine.dispatcher.stop()).toBe(true);
    // Settled before stop() resolved: the dispatcher still held the delivery while it was attempted again.
    const settled = await tdb.db.selectFrom('deliveries').select(['status', 'lease_owner', 'attempt_count']).execute();
    await engine.stop();
    expect(settled).toEqual([{ status: 'delivered', lease_owner: null, attempt_count: 2 }]);
    expect(receiver.requests.map((r) => r.headers['x-service-attempt'])).toEqual(['1', '2']);
    expect(await tdb.db.selectFrom('delivery_attempts').select('attempt').orderBy('attempt').execute()).toEqual([{ attempt: 1 }, { attempt: 2 }]);
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

describe('the local queue and the bounded stop', () => {
  let tdb: TestDb;
  let receiver: Receiver;
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const box = newSecretBox();
  const LEASE_MS = 60_000;
  beforeEach(async () => {
    tdb = await createTestDb();
    receiver = await startReceiver(clock);
  });
  afterEach(async () => {
    await receiver.close();
    await tdb.close();
  });

  /** A dispatcher with one slot and one delivery claimed ahead. */
  function oneSlot(stopGraceMs = 5_000, timeoutMs = 2_000) {
    const client = createWebhookHttpClient({ timeoutMs, guard: false });
    const breakers = createBreakerRegistry({ db: tdb.db, clock, logger: silentLogger(), policy: { failureThreshold: 3, resetTimeoutMs: 300_000 } });
    const options = { retrySchedule: [0, 30_000], maxInFlight: 1, maxInFlightPerHost: 8, leaseMs: LEASE_MS, pollIntervalMs: 60_000, lookahead: 1, stopGraceMs };
    const dispatcher = createDispatcher({ db: tdb.db, clock, logger: silentLogger(), secretBox: box, client, breakers, options });
    return { dispatcher, close: async () => (breakers.shutdown(), await client.close()) };
  }
  const rows = () => tdb.db.selectFrom('deliveries').select(['id', 'event_id', 'status', 'lease_owner', 'attempt_count', 'lease_token']).orderBy('id').execute();
  /** The deliveries split into the one sent first and the others (claims among equal times come in any order). */
  const split = async () => {
    const sent = receiver.requests[0]!.headers['x-service-event-id'];
    const all = await rows();
    return { first: all.find((r) => r.event_id === sent)!, others: all.filter((r) => r.event_id !== sent) };
  };
  const claimAs = (owner: string) => claimDueDeliveries(tdb.db, { owner, now: clock.now(), leaseMs: LEASE_MS, limit: 10, perHostCap: 10, excludeEndpoints: [], maxAttempts: 5 });

  it('claims ahead into the local queue and sends the queued delivery when a slot frees, without another claim', async () => {
    const { dispatcher, close } = oneSlot();
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box }), 2);
    receiver.respond = () => ({ status: 200, delayMs: 100 });
    const run = dispatcher.runOnce();
    await waitFor(() => receiver.requests.length === 1);
    expect(dispatcher.inFlight()).toBe(1);
    expect(dispatcher.queued()).toBe(1);
    expect(await run).toBe(2);
    expect(receiver.requests.map((r) => r.headers['x-service-attempt'])).toEqual(['1', '1']);
    expect((await rows()).map((r) => r.status)).toEqual(['delivered', 'delivered']);
    await close();
  });

  it('never sends a claimed-ahead delivery whose lease ran out while it waited: another claim took it under a newer token', async () => {
    const { dispatcher, close } = oneSlot();
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box }), 2);
    receiver.respond = () => ({ status: 200, delayMs: 150 });
    const run = dispatcher.runOnce();
    await waitFor(() => receiver.requests.length === 1);
    expect(dispatcher.queued()).toBe(1);
    // While the first attempt is out, the queued delivery's lease expires and dispatcher B claims it.
    await passLeaseTime(tdb.db, clock, LEASE_MS);
    const secondId = (await split()).others[0]!.id;
    const taken = (await claimAs('B')).find((r) => r.id === secondId);
    expect(taken).toBeDefined();
    expect(await run).toBe(2);
    // Only the first was sent; the second stays B's, with B's token and attempt count.
    expect(receiver.requests).toHaveLength(1);
    const [second] = (await split()).others;
    expect(second).toMatchObject({ status: 'pending', lease_owner: 'B', attempt_count: 2, lease_token: taken!.lease_token });
    await close();
  });

  it('gives a claimed-ahead delivery back (attempt returned) when too little of its lease is left to send it', async () => {
    const { dispatcher, close } = oneSlot();
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box }), 2);
    receiver.respond = () => ({ status: 200, delayMs: 150 });
    const run = dispatcher.runOnce();
    await waitFor(() => receiver.requests.length === 1);
    clock.advance(LEASE_MS / 2 + 1);
    expect(await run).toBe(2);
    expect(receiver.requests).toHaveLength(1);
    expect((await split()).others).toMatchObject([{ status: 'pending', lease_owner: null, attempt_count: 0 }]);
    expect(await dispatcher.runOnce()).toBe(1);
    expect(receiver.requests.map((r) => r.headers['x-service-attempt'])).toEqual(['1', '1']);
    await close();
  });

  it('stop() gives the local queue back at once, so another dispatcher takes it without waiting for the lease', async () => {
    const { dispatcher, close } = oneSlot();
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box }), 3);
    receiver.respond = () => ({ status: 200, delayMs: 200 });
    dispatcher.start();
    await waitFor(() => receiver.requests.length === 1);
    expect(dispatcher.queued()).toBe(1);
    expect(await dispatcher.stop()).toBe(true);
    const after = await split();
    expect(after.first).toMatchObject({ status: 'delivered', lease_owner: null });
    expect(after.others).toMatchObject([
      { status: 'pending', lease_owner: null, attempt_count: 0 },
      { status: 'pending', lease_owner: null, attempt_count: 0 },
    ]);
    expect(await claimAs('B')).toHaveLength(2); // same clock: no lease had to expire
    await close();
  });

  it('stop() waits for attempts in flight only up to its grace, then leaves them to their leases', async () => {
    // The attempt's own timeout (60 s) is far from the grace (200 ms): stop() returning within 10 s
    // can only be the grace, with room for a loaded machine (the old 1.5 s bound against a 2 s timeout had none).
    const { dispatcher, close } = oneSlot(200, 60_000);
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box }), 1);
    receiver.respond = () => 'hang';
    dispatcher.start();
    await waitFor(() => receiver.requests.length === 1);
    const t0 = performance.now();
    expect(await dispatcher.stop()).toBe(false);
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(await rows()).toMatchObject([{ status: 'pending', lease_owner: dispatcher.id, attempt_count: 1 }]);
    void close();
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
    expect(mine).toMatchObject({ lease_owner: 'A', attempt_count: 1 });
    // The deadline is now + lease: the lease clock's now on SQLite, the database server's on PostgreSQL.
    const leased = await tdb.db.selectFrom('deliveries').select('lease_expires_at').where('id', '=', mine!.id).executeTakeFirstOrThrow();
    expect(Math.abs(Number(leased.lease_expires_at) - ((onPostgres ? Date.now() : clock.now()) + 60_000))).toBeLessThanOrEqual(onPostgres ? 10_000 : 0);
    expect(await claim('B')).toEqual([]);
    await passLeaseTime(tdb.db, clock, 60_000);
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

  it('takes the earliest due deliveries across hosts, within each host\'s cap and the global limit, however many hosts have free slots', async () => {
    // Host i's two deliveries fall due at minutes i and 10 + i.
    const start = clock.now();
    const launches: string[] = [];
    for (let i = 0; i < 6; i++) launches.push(await insertLaunch(tdb.db, clock, { url: `https://h${i}.example.com/h`, secret: 's', box }));
    for (const round of [0, 10]) {
      for (let i = 0; i < 6; i++) {
        clock.set(start + (round + i) * 60_000);
        await commitEvents(tdb.db, clock, launches[i]!, 1);
      }
    }
    clock.set(start + 30 * 60_000);
    const hosts = (rows: Array<{ host: string }>) => rows.map((r) => r.host);
    // Six hosts with free slots and a binding global limit (the ranking statement).
    expect(hosts(await claim('A', { perHostCap: 2, limit: 3 }))).toEqual(['h0.example.com', 'h1.example.com', 'h2.example.com']);
    // Hosts 0-2 hold one lease each now; cap 1 leaves slots on hosts 3-5 only, one each.
    expect(hosts(await claim('B', { perHostCap: 1, limit: 10 }))).toEqual(['h3.example.com', 'h4.example.com', 'h5.example.com']);
    // One host with free slots (claimed on its own): its earliest due first, up to the limit.
    const [second] = await claim('C', { perHostCap: 2, limit: 1, onlyHost: 'h0.example.com' });
    expect(second).toMatchObject({ host: 'h0.example.com', lease_owner: 'C' });
    const due = await tdb.db.selectFrom('deliveries').select('next_attempt_at').where('id', '=', second!.id).executeTakeFirstOrThrow();
    expect(Number(due.next_attempt_at)).toBe(start + 10 * 60_000);
    // Two hosts with free slots, every slot fillable (claimed one host at a time): both hosts' remaining delivery.
    expect(hosts(await claim('D', { perHostCap: 2, limit: 10, excludeEndpoints: ['https://h2.example.com:443/h', 'https://h3.example.com:443/h', 'https://h4.example.com:443/h', 'https://h5.example.com:443/h'] }))).toEqual(['h1.example.com']);
    expect(await claim('E', { perHostCap: 2, limit: 10 })).toHaveLength(4);
    expect(await claim('F', { perHostCap: 10, limit: 10 })).toEqual([]);
  });
});
