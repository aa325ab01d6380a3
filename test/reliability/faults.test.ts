import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine, type WebhookEngine } from '../../src/webhooks/engine.js';
import { commitEvents, createTestDb, insertLaunch, engineConfig, type TestDb } from '../support/webhooks.js';
import { startFaultReceiver, type Fault, type FaultReceiver } from './support/faultReceiver.js';

// Shrunk schedule (manual clock) and a 300 ms attempt timeout (real time: it bounds a socket).
const SCHEDULE = [0, 1_000, 2_000, 3_000, 4_000];
const RESET_MS = 10_000;
const box = createSecretBox(randomBytes(32));

let tdb: TestDb;
let receiver: FaultReceiver;
let engine: WebhookEngine | undefined;
beforeEach(async () => {
  tdb = await createTestDb();
  receiver = await startFaultReceiver();
});
afterEach(async () => {
  await engine?.stop();
  engine = undefined;
  await receiver.close();
  await tdb.close();
});

function start(clock: ReturnType<typeof manualClock>, threshold: number): WebhookEngine {
  const config = engineConfig({ webhooks: { retrySchedule: SCHEDULE, timeoutMs: 300, maxInFlight: 16, maxInFlightPerHost: 8 }, breaker: { failureThreshold: threshold, resetTimeoutMs: RESET_MS } });
  engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config, secretBox: box });
  return engine;
}

const deliveries = () => tdb.db.selectFrom('deliveries').selectAll().orderBy('created_at').execute();

describe('fault-injecting receiver', () => {
  it('fails 500s, resets, timeouts, slow bodies and redirects, logs each with its class, retries on the schedule and dead-letters after the fifth', async () => {
    const clock = manualClock(Date.UTC(2026, 10, 22, 12));
    const faults: Fault[] = ['500', 'reset', 'hang', 'slow-body', '302'];
    receiver.decide = (path) => (path.slice(1) as Fault) ?? 'ok';
    for (const fault of faults) await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: `${receiver.origin}/${fault}`, secret: 'whsec_faults_0123456789', box }), 1);
    const e = start(clock, 1000); // breaker out of reach: this test is about the schedule

    // Attempts the receiver saw: one request each, except that a reset on a reused keep-alive
    // socket is sent once more at once on a fresh connection (a stale socket is not the receiver's
    // fault), with the same attempt number.
    const seen = () => new Set(receiver.log.map((r) => `${r.eventId} ${r.attempt}`)).size;
    const started = clock.now();
    for (let attempt = 1; attempt <= SCHEDULE.length; attempt++) {
      await e.dispatcher.drain();
      expect(seen()).toBe(attempt * faults.length);
      // Not due again before the next delay of the schedule has passed.
      clock.advance((SCHEDULE[attempt] ?? 1_000) - 1);
      await e.dispatcher.drain();
      expect(seen()).toBe(attempt * faults.length);
      clock.advance(1);
    }
    const repeated = receiver.log.filter((r, i) => receiver.log.findIndex((o) => o.eventId === r.eventId && o.attempt === r.attempt) !== i);
    expect(repeated.every((r) => r.path === '/reset')).toBe(true);
    expect(receiver.log.some((r) => r.path === '/redirected')).toBe(false);

    const rows = await deliveries();
    expect(rows.map((r) => [r.status, r.attempt_count])).toEqual(faults.map(() => ['failed', 5]));
    const attempts = await tdb.db.selectFrom('delivery_attempts').selectAll().orderBy('attempt').execute();
    // By URL, not by position: the five deliveries share one created_at (manual clock), and PostgreSQL
    // returns ties in no particular order.
    const deliveryOf = (fault: Fault) => rows.find((r) => r.url === `${receiver.origin}/${fault}`)!;
    const classOf = (fault: Fault) => new Set(attempts.filter((a) => a.delivery_id === deliveryOf(fault).id).map((a) => a.error_class));
    expect(classOf('500')).toEqual(new Set(['http_status']));
    expect(classOf('reset')).toEqual(new Set(['connection_error']));
    expect(classOf('hang')).toEqual(new Set(['timeout']));
    expect(classOf('slow-body')).toEqual(new Set(['timeout']));
    expect(classOf('302')).toEqual(new Set(['redirect']));
    // Attempt i+1 started exactly SCHEDULE[i] after attempt i (manual clock, nothing else moved it).
    const starts = attempts.filter((a) => a.delivery_id === rows[0]!.id).map((a) => a.started_at - started);
    expect(starts).toEqual([0, 1_000, 3_000, 6_000, 10_000]);
    const dead = await tdb.db.selectFrom('dead_letters').selectAll().execute();
    expect(dead.map((d) => d.delivery_id).sort()).toEqual(rows.map((r) => r.id).sort());
  });

  it('opens the breaker after three consecutive faults, pauses the rest without spending attempts, lets one trial through per half-open window and resumes on success', async () => {
    const clock = manualClock(Date.UTC(2026, 10, 22, 12));
    const failures: Fault[] = ['500', 'reset', 'hang'];
    let healthy = false;
    receiver.decide = (_path, n) => (healthy ? 'ok' : (failures[n % failures.length] ?? '500'));
    const launchId = await insertLaunch(tdb.db, clock, { url: `${receiver.origin}/hook`, secret: 'whsec_faults_0123456789', box });
    const events = await commitEvents(tdb.db, clock, launchId, 20);
    const e = start(clock, 3);
    const host = new URL(receiver.origin).host;

    await e.dispatcher.drain();
    const firstWave = receiver.log.length; // attempts already in flight when the third failure opened it
    expect(firstWave).toBeGreaterThanOrEqual(3);
    expect(firstWave).toBeLessThanOrEqual(8);
    expect(e.breakers.snapshot()[host]?.state).toBe('open');

    // Open: nothing goes out however long we wait (short of the reset time), and no attempt is consumed.
    for (let i = 0; i < 5; i++) {
      clock.advance(1_900);
      await e.dispatcher.drain();
    }
    expect(receiver.log.length).toBe(firstWave);
    expect((await deliveries()).filter((d) => d.attempt_count === 0)).toHaveLength(20 - firstWave);

    // Half-open: exactly one trial; it fails, so open again for another reset period.
    clock.advance(RESET_MS);
    expect(e.breakers.snapshot()[host]?.state).toBe('half-open');
    await e.dispatcher.drain();
    await e.dispatcher.drain();
    expect(receiver.log.length).toBe(firstWave + 1);
    expect(e.breakers.snapshot()[host]?.state).toBe('open');
    clock.advance(RESET_MS - 1);
    await e.dispatcher.drain();
    expect(receiver.log.length).toBe(firstWave + 1);

    // Next window: the trial succeeds, the breaker closes and every paused delivery goes out.
    healthy = true;
    clock.advance(1);
    await e.dispatcher.drain();
    clock.advance(SCHEDULE.at(-1)!); // let the first wave's retries come due as well
    await e.dispatcher.drain();
    expect(e.breakers.snapshot()[host]).toEqual({ state: 'closed', failures: 0 });
    const rows = await deliveries();
    expect(rows.every((d) => d.status === 'delivered')).toBe(true);
    expect(new Set(receiver.log.filter((r) => r.fault === 'ok').map((r) => r.eventId))).toEqual(new Set(events));
    // Paused deliveries went out on their first attempt: waiting cost them nothing.
    expect(rows.filter((d) => d.attempt_count === 1).length).toBeGreaterThanOrEqual(20 - firstWave - 1);
  });
});
