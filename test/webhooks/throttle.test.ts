import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/lib/clock.js';
import { commitEvents, insertLaunch, startReceiver, type Receiver } from '../support/webhooks.js';
import { startEndpointHarness, type EndpointHarness } from './support/endpointHarness.js';

type Json = Record<string, any>;

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The most arrivals in any one-second window [t, t + 1000) starting at an arrival. */
function busiestSecond(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0; i < sorted.length; i++) most = Math.max(most, sorted.filter((t) => t >= sorted[i]! && t < sorted[i]! + 1000).length);
  return most;
}

describe('per-endpoint throttle: rateLimitPerSecond (docs/webhooks.md, "Throttle")', () => {
  let h: EndpointHarness;
  let throttled: Receiver;
  let launchReceiver: Receiver;
  beforeEach(async () => {
    // A real clock and the running dispatcher: the throttle is about time. A breaker threshold of 3
    // would open on three counted failures; waiting must not count as any.
    h = await startEndpointHarness(systemClock, { pollIntervalMs: 1_000 }, { failureThreshold: 3 });
    throttled = await startReceiver(systemClock, '/slow');
    launchReceiver = await startReceiver(systemClock, '/launch');
  });
  afterEach(async () => {
    await h.close();
    await throttled.close();
    await launchReceiver.close();
  });

  it('never sends more than the rate in any one-second window, with no failed attempt and no breaker effect, while the launch URL gets everything at once', async () => {
    const endpoint = await h.createEndpoint({ url: throttled.url, rateLimitPerSecond: 4 });
    expect(endpoint.rateLimitPerSecond).toBe(4);
    const launchId = await insertLaunch(h.tdb.db, systemClock, { url: launchReceiver.url, secret: 'whsec_throttle_launch_01', box: h.box });
    h.service.start();
    const started = Date.now();
    await commitEvents(h.tdb.db, systemClock, launchId, 12, 'launch.step_complete');
    h.service.signal.notify();

    // The launch's own URL is not throttled and not held: all 12 arrive long before the throttled ones.
    await until(() => launchReceiver.requests.length === 12, 'the launch URL deliveries');
    const launchDone = Date.now();
    expect(throttled.requests.length).toBeLessThan(12);
    await until(() => throttled.requests.length === 12, 'the throttled deliveries');
    const times = throttled.requests.map((r) => r.at);
    expect(busiestSecond(times)).toBeLessThanOrEqual(4);
    expect(busiestSecond(times)).toBeGreaterThanOrEqual(3); // it did send at about the rate
    expect(Math.max(...times) - started).toBeGreaterThanOrEqual(2_000); // 12 at 4 a second: over 2 s
    expect(launchDone - started).toBeLessThan(Math.max(...times) - started);

    // Waiting was not failing: one attempt each, all successes, every event once; the breaker saw nothing.
    const rowsNow = () => h.tdb.db.selectFrom('deliveries').select(['status', 'attempt_count']).where('endpoint_id', '=', endpoint.id).execute();
    await until(async () => (await rowsNow()).every((d) => d.status !== 'pending'), 'the last settles');
    const rows = await rowsNow();
    expect(rows).toHaveLength(12);
    expect(rows.every((d) => d.status === 'delivered' && Number(d.attempt_count) === 1)).toBe(true);
    const ids = throttled.requests.map((r) => (JSON.parse(r.body) as Json).id as string);
    expect(new Set(ids).size).toBe(12);
    const attempts = await h.tdb.db.selectFrom('delivery_attempts').select('outcome').where('outcome', '=', 'failure').execute();
    expect(attempts).toHaveLength(0);
    const breakers = await h.tdb.db.selectFrom('endpoint_breakers').select(['state', 'failures']).execute();
    expect(breakers.every((b) => b.state === 'closed' && Number(b.failures) === 0)).toBe(true);
  });

  it('validates rateLimitPerSecond on create and update, shows it, and null lifts the throttle', async () => {
    for (const bad of [0, -1, 1.5, '5', 1001, true, [5]]) {
      const res = await h.call('POST', '/webhook-endpoints', h.keys.acme, { url: throttled.url, rateLimitPerSecond: bad });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.error.details.fields.map((f: Json) => f.field)).toContain('rateLimitPerSecond');
    }
    expect(await h.tdb.db.selectFrom('webhook_endpoints').select('id').execute()).toHaveLength(0);
    const endpoint = await h.createEndpoint({ url: throttled.url });
    expect(endpoint.rateLimitPerSecond).toBeNull();
    const set = await h.call('PATCH', `/webhook-endpoints/${endpoint.id}`, h.keys.acme, { rateLimitPerSecond: 10 });
    expect(set.body.endpoint.rateLimitPerSecond).toBe(10);
    expect((await h.call('PATCH', `/webhook-endpoints/${endpoint.id}`, h.keys.acme, { rateLimitPerSecond: 0 })).status).toBe(400);
    expect((await h.call('GET', `/webhook-endpoints/${endpoint.id}`, h.keys.acmeRead)).body.endpoint.rateLimitPerSecond).toBe(10);
    const cleared = await h.call('PATCH', `/webhook-endpoints/${endpoint.id}`, h.keys.acme, { rateLimitPerSecond: null });
    expect(cleared.body.endpoint.rateLimitPerSecond).toBeNull();
  });
});

describe('a half-open breaker trial to a throttled endpoint (docs/webhooks.md, "Throttle")', () => {
  let h: EndpointHarness;
  let receiver: Receiver;
  let launchReceiver: Receiver;
  beforeEach(async () => {
    // One failure opens the breaker, and it half-opens 300 ms later: well inside the throttle's 1.2 s slot.
    h = await startEndpointHarness(systemClock, { pollIntervalMs: 100 }, { failureThreshold: 1, resetTimeoutMs: 300 });
    receiver = await startReceiver(systemClock, '/trial');
    launchReceiver = await startReceiver(systemClock, '/launch');
  });
  afterEach(async () => {
    await h.close();
    await receiver.close();
    await launchReceiver.close();
  });

  it('waits for the endpoint’s send slot and takes it, so the trial and the sends after it keep the rate', async () => {
    receiver.respond = () => (receiver.requests.length === 1 ? { status: 503 } : { status: 200 });
    const endpoint = await h.createEndpoint({ url: receiver.url, rateLimitPerSecond: 1 });
    const launchId = await insertLaunch(h.tdb.db, systemClock, { url: launchReceiver.url, secret: 'whsec_throttle_trial_01', box: h.box });
    h.service.start();
    await commitEvents(h.tdb.db, systemClock, launchId, 4, 'launch.step_complete');
    h.service.signal.notify();

    // The first send fails and opens the breaker; its retry waits 30 s. The other three go one slot
    // (1.2 s) apart: the first of them is the half-open trial (old code: sent as soon as the breaker
    // half-opened, 0.3-0.4 s after the failure, two sends in one second).
    await until(() => receiver.requests.length >= 4, 'the trial and the sends after it');
    await until(async () => (await h.tdb.db.selectFrom('deliveries').select('id').where('endpoint_id', '=', endpoint.id).where('status', '=', 'delivered').execute()).length === 3, 'the settles');
    const attempts = await h.tdb.db
      .selectFrom('delivery_attempts')
      .innerJoin('deliveries', 'deliveries.id', 'delivery_attempts.delivery_id')
      .select(['delivery_attempts.status_code', 'delivery_attempts.started_at'])
      .where('deliveries.endpoint_id', '=', endpoint.id)
      .orderBy('delivery_attempts.started_at')
      .execute();
    expect(attempts.map((a) => Number(a.status_code))).toEqual([503, 200, 200, 200]);
    // When the dispatcher started each send (its own clock: the receiver's stamps, in this process
    // too, bunch up when a loaded machine stalls the loop): a slot (1.2 s) apart, less the start's
    // slack and, on PostgreSQL, the difference between the slot's clock (the database's) and ours.
    const starts = attempts.map((a) => Number(a.started_at));
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    expect(Math.min(...gaps), `gaps ${gaps.join(', ')} ms`).toBeGreaterThanOrEqual(900);
    // The trial's success closed the breaker; each delivery spent one attempt (the failed one waits for its retry).
    const breakers = await h.tdb.db.selectFrom('endpoint_breakers').select(['state']).execute();
    expect(breakers.map((b) => b.state)).toEqual(['closed']);
    const rows = await h.tdb.db.selectFrom('deliveries').select(['status', 'attempt_count']).where('endpoint_id', '=', endpoint.id).execute();
    expect(rows.map((d) => Number(d.attempt_count))).toEqual([1, 1, 1, 1]);
  });
});
