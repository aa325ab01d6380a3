import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createBreakerRegistry } from '../../src/webhooks/breakerRegistry.js';
import { hostOfEndpoint } from '../../src/webhooks/endpointKey.js';
import { onPostgres } from '../support/database.js';
import { createWebhookEngine, type WebhookEngine } from '../../src/webhooks/engine.js';
import type { AttemptOutcome } from '../../src/webhooks/httpClient.js';
import { commitEvents, createTestDb, engineConfig, insertLaunch, newSecretBox, startReceiver, type Receiver, type TestDb } from '../support/webhooks.js';

// Several instances on one database (docs/architecture.md, SQLite and PostgreSQL): the database is the breakers' authority. Each
// "instance" here is a webhook engine of its own (its own dispatcher, breaker registry and lease
// owner id) on the same database, as separate processes would be.

const MIN = 60_000;
const policy = { failureThreshold: 3, resetTimeoutMs: 5 * MIN };
const failed: AttemptOutcome = { ok: false, statusCode: 500, durationMs: 1, responseBody: '', errorClass: 'http_error', errorMessage: 'HTTP 500' };
const ENDPOINT = 'https://down.example.com:443/hook';

describe('breakers shared by several instances on one database', () => {
  let tdb: TestDb;
  let receiver: Receiver;
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const box = newSecretBox();
  let engines: WebhookEngine[] = [];

  beforeEach(async () => {
    tdb = await createTestDb();
    receiver = await startReceiver(clock);
  });
  afterEach(async () => {
    for (const engine of engines) await engine.stop();
    engines = [];
    await receiver.close();
    await tdb.close();
  });

  it('counts failures from every instance, opens one breaker that all three see, and lets exactly one half-open trial out across them', async () => {
    const config = engineConfig({ webhooks: { maxInFlightPerHost: 1 }, breaker: policy });
    engines = [0, 1, 2].map(() => createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config, secretBox: box }));
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box });
    await commitEvents(tdb.db, clock, launchId, 8);
    const host = new URL(receiver.url).host;
    receiver.respond = () => ({ status: 500 });
    /** What every instance shows after reading the database (a read is trusted for at most a second). */
    const views = async () => {
      for (const e of engines) e.breakers.invalidate();
      return Promise.all(engines.map(async (e) => (await e.breakers.load(), e.breakers.snapshot()[host])));
    };

    // One failure through each instance: three consecutive failures of the endpoint, wherever they happened.
    for (const engine of engines) expect(await engine.dispatcher.runOnce()).toBe(1);
    expect(receiver.requests).toHaveLength(3);
    expect(await views()).toEqual([0, 1, 2].map(() => ({ state: 'open', failures: 3 })));
    const row = await tdb.db.selectFrom('endpoint_breakers').select(['state', 'failures', 'version']).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ state: 'open', failures: 3 });

    // While open no instance sends anything.
    clock.advance(MIN);
    expect(await Promise.all(engines.map((e) => e.dispatcher.runOnce()))).toEqual([0, 0, 0]);
    expect(receiver.requests).toHaveLength(3);

    // Past the reset timeout all three try at once: one trial goes out, from one instance.
    clock.advance(4 * MIN);
    receiver.respond = () => ({ status: 503 });
    const sent = await Promise.all(engines.map((e) => e.dispatcher.runOnce()));
    expect(sent.reduce((a, b) => a + b, 0)).toBe(1);
    expect(receiver.requests).toHaveLength(4);
    // The failed trial re-opened it for everyone; nothing more until the next reset timeout.
    expect(await views()).toEqual([0, 1, 2].map(() => ({ state: 'open', failures: 4 })));
    expect(await Promise.all(engines.map((e) => e.dispatcher.runOnce()))).toEqual([0, 0, 0]);

    // Next half-open: again one trial across the three; it succeeds and closes the breaker everywhere.
    clock.advance(5 * MIN);
    receiver.respond = () => ({ status: 200 });
    const trial = await Promise.all(engines.map((e) => e.dispatcher.runOnce()));
    expect(trial.reduce((a, b) => a + b, 0)).toBe(1);
    expect(receiver.requests).toHaveLength(5);
    expect(await views()).toEqual([0, 1, 2].map(() => ({ state: 'closed', failures: 0 })));

    await Promise.all(engines.map((e) => e.dispatcher.drain()));
    const deliveries = await tdb.db.selectFrom('deliveries').select(['status', 'attempt_count']).execute();
    expect(deliveries.every((d) => d.status === 'delivered')).toBe(true);
    expect(deliveries.reduce((n, d) => n + d.attempt_count, 0)).toBe(receiver.requests.length);
  });

  it('two instances recording failures at the same moment both count (compare-and-set, not last writer wins)', async () => {
    const [a, b] = [0, 1].map(() => createBreakerRegistry({ db: tdb.db, clock, logger: silentLogger(), policy: { ...policy, failureThreshold: 10 } }));
    await Promise.all([a!.load(), b!.load()]);
    for (let round = 0; round < 3; round++) {
      await Promise.all([a!.execute(ENDPOINT, false, async () => failed), b!.execute(ENDPOINT, false, async () => failed)]);
    }
    const row = await tdb.db.selectFrom('endpoint_breakers').select(['state', 'failures', 'version']).executeTakeFirstOrThrow();
    expect(row).toEqual({ state: 'closed', failures: 6, version: 6 });
    a!.shutdown();
    b!.shutdown();
  });

  it('a trial lease whose holder died runs out and another instance takes it; a live one is never taken', async () => {
    const TRIAL_LEASE = 20_000;
    const make = () => createBreakerRegistry({ db: tdb.db, clock, logger: silentLogger(), policy, trialLeaseMs: TRIAL_LEASE });
    const [a, b] = [make(), make()];
    await a.load();
    for (let i = 0; i < 3; i++) await a.execute(ENDPOINT, false, async () => failed);
    await b.load();
    expect(b.blockedEndpoints()).toEqual([ENDPOINT]);

    clock.advance(5 * MIN);
    await a.refresh();
    await b.refresh();
    expect(a.trialEndpoints()).toEqual([ENDPOINT]);
    expect(b.trialEndpoints()).toEqual([]);
    expect(a.beginTrial(ENDPOINT)).toBe(true);
    // a "dies" holding the trial. Until its lease runs out nobody else tries.
    clock.advance(TRIAL_LEASE - 1);
    await b.refresh();
    expect(b.trialEndpoints()).toEqual([]);
    clock.advance(1);
    await b.refresh();
    expect(b.trialEndpoints()).toEqual([ENDPOINT]);
    expect(b.beginTrial(ENDPOINT)).toBe(true);
    await b.execute(ENDPOINT, true, async () => ({ ...failed, ok: true, statusCode: 200, errorClass: null, errorMessage: null }));
    const row = await tdb.db.selectFrom('endpoint_breakers').select(['state', 'failures', 'trial_owner']).executeTakeFirstOrThrow();
    expect(row).toEqual({ state: 'closed', failures: 0, trial_owner: null });
    // a's late result does not count: a half-open trial it no longer holds found the breaker closed.
    a.invalidate();
    await a.load();
    expect(a.admits(ENDPOINT)).toBe(true);
    a.shutdown();
    b.shutdown();
  });

  it.skipIf(!onPostgres)('times breakers by the database server\'s clock on PostgreSQL: instances whose clocks are 10 minutes apart agree on when a breaker opened, when it may try again and whose trial lease is live', async () => {
    const ahead = 10 * MIN;
    const host = hostOfEndpoint(ENDPOINT);
    const registry = (skew: number) =>
      createBreakerRegistry({ db: tdb.db, clock: { now: () => Date.now() + skew }, logger: silentLogger(), policy: { failureThreshold: 1, resetTimeoutMs: MIN }, trialLeaseMs: MIN, databaseClock: true });
    const [a, b, c] = [registry(0), registry(ahead), registry(-ahead)];
    const view = async (r: ReturnType<typeof registry>) => {
      r.invalidate();
      await r.load();
      await r.refresh();
      return { state: r.stateOf(host).state, trial: r.trialEndpoints() };
    };
    await a.load();
    await a.execute(ENDPOINT, false, async () => failed);
    // Opened by the server's clock: the instance 10 minutes ahead does not see its minute as over.
    expect(await view(b)).toEqual({ state: 'open', trial: [] });
    expect(await view(a)).toEqual({ state: 'open', trial: [] });
    // The reset timeout passes on the server's clock (the stored opening moves a minute back).
    await tdb.db.updateTable('endpoint_breakers').set((eb) => ({ opened_at: eb('opened_at', '-', MIN + 1_000) })).execute();
    // The instance 10 minutes behind sees it half-open all the same, and takes the one trial lease.
    expect(await view(c)).toEqual({ state: 'half-open', trial: [ENDPOINT] });
    // That lease is live on the server's clock: neither the instance ahead nor the other takes it.
    expect(await view(b)).toEqual({ state: 'half-open', trial: [] });
    expect(await view(a)).toEqual({ state: 'half-open', trial: [] });
    const row = await tdb.db.selectFrom('endpoint_breakers').select(['trial_until', 'opened_at']).executeTakeFirstOrThrow();
    const server = Date.now();
    expect(Math.abs(Number(row.trial_until) - MIN - server)).toBeLessThan(10_000);
    for (const r of [a, b, c]) r.shutdown();
  });
});
