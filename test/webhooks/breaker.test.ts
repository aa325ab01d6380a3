import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabaseAt } from '../support/database.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { advanceBreaker, breakerFailed, breakerSucceeded, initialBreakerState } from '../../src/webhooks/breakerState.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { commitEvents, createTestDb, insertLaunch, newSecretBox, startReceiver, engineConfig, type Receiver, type TestDb } from '../support/webhooks.js';

const policy = { failureThreshold: 3, resetTimeoutMs: 300_000 };
const MIN = 60_000;

describe('breaker state machine', () => {
  it('opens on the third consecutive failure, half-opens after the reset timeout, and a success in between resets the count', () => {
    let s = breakerFailed(initialBreakerState, 0, policy);
    s = breakerFailed(s, 1, policy);
    expect(breakerSucceeded(s)).toEqual(initialBreakerState);
    s = breakerFailed(s, 2, policy);
    expect(s).toEqual({ state: 'open', failures: 3, openedAt: 2 });
    expect(advanceBreaker(s, 2 + 299_999, policy).state).toBe('open');
    const half = advanceBreaker(s, 2 + 300_000, policy);
    expect(half.state).toBe('half-open');
    expect(breakerFailed(half, 400_000, policy)).toEqual({ state: 'open', failures: 4, openedAt: 400_000 });
    expect(breakerSucceeded(half)).toEqual(initialBreakerState);
    expect(breakerSucceeded(s)).toBe(s); // a straggler's success does not close an open breaker
  });
});

describe('per-host circuit breaker in the dispatcher', () => {
  let tdb: TestDb;
  let receiver: Receiver;
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const box = newSecretBox();
  const config = engineConfig({ webhooks: { maxInFlightPerHost: 1 } });

  beforeEach(async () => {
    tdb = await createTestDb();
    receiver = await startReceiver(clock);
  });
  afterEach(async () => {
    await receiver.close();
    await tdb.close();
  });

  const breakerRow = () => tdb.db.selectFrom('endpoint_breakers').select(['state', 'failures', 'opened_at']).executeTakeFirst();

  it('opens after 3 consecutive failures, sends nothing while open, sends exactly one trial after 5 min, reopens on failure and closes on success', async () => {
    const engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config, secretBox: box });
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box });
    await commitEvents(tdb.db, clock, launchId, 6);
    const host = new URL(receiver.url).host;
    receiver.respond = () => ({ status: 500 });

    for (let i = 1; i <= 3; i++) expect(await engine.dispatcher.runOnce()).toBe(1);
    expect(engine.breakers.snapshot()).toEqual({ [host]: { state: 'open', failures: 3 } });
    expect(await breakerRow()).toEqual({ state: 'open', failures: 3, opened_at: clock.now() });

    clock.advance(5 * MIN - 1);
    expect(await engine.dispatcher.runOnce()).toBe(0);
    expect(receiver.requests).toHaveLength(3);

    clock.advance(1);
    expect(engine.breakers.snapshot()[host]).toEqual({ state: 'half-open', failures: 3 });
    expect(await engine.dispatcher.runOnce()).toBe(1);
    expect(await engine.dispatcher.runOnce()).toBe(0);
    expect(receiver.requests).toHaveLength(4);
    expect(engine.breakers.stateOf(host)).toEqual({ state: 'open', failures: 4 });
    expect((await breakerRow())?.opened_at).toBe(clock.now());

    clock.advance(5 * MIN);
    receiver.respond = () => ({ status: 200 });
    expect(await engine.dispatcher.runOnce()).toBe(1);
    expect(engine.breakers.stateOf(host)).toEqual({ state: 'closed', failures: 0 });
    expect(await breakerRow()).toEqual({ state: 'closed', failures: 0, opened_at: null });

    await engine.dispatcher.drain();
    const deliveries = await tdb.db.selectFrom('deliveries').select(['status', 'attempt_count']).execute();
    expect(deliveries.every((d) => d.status === 'delivered')).toBe(true);
    // Waiting while open consumed no attempts: every counted attempt reached the receiver.
    expect(deliveries.reduce((n, d) => n + d.attempt_count, 0)).toBe(receiver.requests.length);
    expect(receiver.requests).toHaveLength(4 + 6);
    await engine.stop();
  });

  it('keeps its state across a restart on the same database file', async () => {
    const first = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config, secretBox: box });
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box });
    await commitEvents(tdb.db, clock, launchId, 4);
    const host = new URL(receiver.url).host;
    receiver.respond = () => ({ status: 502 });
    for (let i = 0; i < 3; i++) await first.dispatcher.runOnce();
    await first.stop();

    const reopened = openDatabaseAt(tdb.path);
    try {
      const second = createWebhookEngine({ db: reopened.db, clock, logger: silentLogger(), config, secretBox: box });
      await second.breakers.load();
      expect(second.breakers.snapshot()).toEqual({ [host]: { state: 'open', failures: 3 } });
      clock.advance(4 * MIN);
      expect(await second.dispatcher.runOnce()).toBe(0);
      clock.advance(MIN);
      receiver.respond = () => ({ status: 200 });
      expect(await second.dispatcher.runOnce()).toBe(1);
      expect(second.breakers.snapshot()[host]).toEqual({ state: 'closed', failures: 0 });
      expect(receiver.requests).toHaveLength(4);
      await second.stop();
    } finally {
      await reopened.close();
    }
  });

  it('does not let a dead host slow deliveries to a healthy host', async () => {
    const DEAD_TIMEOUT_MS = 4_000;
    const dead = await startReceiver(clock);
    dead.respond = () => 'hang';
    const engine = createWebhookEngine({
      db: tdb.db,
      clock,
      logger: silentLogger(),
      config: engineConfig({ webhooks: { timeoutMs: DEAD_TIMEOUT_MS, maxInFlight: 8, maxInFlightPerHost: 2 } }),
      secretBox: box,
    });
    try {
      const deadLaunch = await insertLaunch(tdb.db, clock, { url: dead.url, secret: 's', box });
      const liveLaunch = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box });
      await commitEvents(tdb.db, clock, deadLaunch, 6);
      await commitEvents(tdb.db, clock, liveLaunch, 20);
      const started = performance.now();
      await engine.start();
      while (receiver.requests.length < 20 && performance.now() - started < 2 * DEAD_TIMEOUT_MS) await new Promise((r) => setTimeout(r, 5));
      const elapsed = performance.now() - started;
      expect(receiver.requests).toHaveLength(20);
      // The healthy host never waited for the dead host: all 20 arrived before its first timeout could
      // fire (a bound with room for a busy machine, not a speed target).
      expect(elapsed).toBeLessThan(DEAD_TIMEOUT_MS);
      expect(dead.requests.length).toBeLessThanOrEqual(2); // its per-host cap
    } finally {
      await engine.stop();
      await dead.close();
    }
    const failedDead = await tdb.db.selectFrom('delivery_attempts').select('error_class').where('error_class', '=', 'timeout').execute();
    expect(failedDead.length).toBeGreaterThanOrEqual(1);
  });
});
