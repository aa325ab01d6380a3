import SqliteDatabase from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/config.js';
import { noWakeups } from '../../src/db/wakeups.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { updateLaunchDestination } from '../../src/launches/updateDestination.js';
import { createEndpoint, rotateEndpointSecret } from '../../src/webhooks/endpoints/endpoints.js';
import { createWebhookEngine, type WebhookEngine } from '../../src/webhooks/engine.js';
import { insertEvents, newHandoff, type DeliveryHandoff } from '../../src/webhooks/outbox.js';
import { loadDeliveryContexts } from '../../src/webhooks/sql/deliveryQueries.js';
import { verifyWebhook } from '../../packages/webhooks/src/index.js';
import { onPostgres } from '../support/database.js';
import { createTestDb, engineConfig, insertLaunch, newSecretBox, startReceiver, type Receiver, type TestDb } from '../support/webhooks.js';

async function waitFor(predicate: () => boolean, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Counts the statements of the ordinary claim (the lane walk, the context read) run while `body` runs. */
async function countingSearches(body: () => Promise<void>): Promise<{ walks: number; contextReads: number }> {
  const probe = new SqliteDatabase(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('select 1')) as Record<'all' | 'run' | 'get', (...args: unknown[]) => unknown>;
  probe.close();
  const originals = { all: proto.all, run: proto.run, get: proto.get };
  const seen = { walks: 0, contextReads: 0 };
  for (const method of ['all', 'run', 'get'] as const) {
    const original = originals[method];
    proto[method] = function (this: { source: string }, ...args: unknown[]) {
      if (this.source.includes('with recursive endpoints')) seen.walks += 1;
      if (this.source.includes('inner join outbox_events e on e.id = d.event_id')) seen.contextReads += 1;
      return original.apply(this, args);
    };
  }
  try {
    await body();
  } finally {
    Object.assign(proto, originals);
  }
  return seen;
}

const SECRET = 'whsec_handoff_test_secret';

describe('deliveries handed to the dispatcher with their commit', () => {
  let tdb: TestDb;
  let receiver: Receiver;
  let engine: WebhookEngine | undefined;
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const box = newSecretBox();

  beforeEach(async () => {
    tdb = await createTestDb();
    receiver = await startReceiver(clock);
  });
  afterEach(async () => {
    await engine?.stop();
    engine = undefined;
    await receiver.close();
    await tdb.close();
  });

  /** Records `count` events of the launch in one transaction, as the runner does, with a handoff. */
  async function commitWithHandoff(launchId: string, count: number): Promise<DeliveryHandoff> {
    let handoff = newHandoff();
    await tdb.db.transaction().execute(async (trx) => {
      handoff = newHandoff();
      const launch = await trx
        .updateTable('launches')
        .set((eb) => ({ next_sequence: eb('next_sequence', '+', count) }))
        .where('id', '=', launchId)
        .returning(['next_sequence', 'webhook_url', 'owner', 'webhook_secret_enc'])
        .executeTakeFirstOrThrow();
      const target = { launchId, webhookUrl: launch.webhook_url, owner: launch.owner, firstSequence: launch.next_sequence - count, webhookSecretSealed: launch.webhook_secret_enc };
      const events = Array.from({ length: count }, (_, i) => ({ event: 'launch.step_complete', requestId: `req_${i}`, data: { step: 'create_mint', index: i } }));
      await insertEvents(trx, clock, target, events, handoff);
    });
    return handoff;
  }

  function startEngine(webhooks: Partial<Config['webhooks']> = {}): WebhookEngine {
    // With wake-ups, as the service builds it (noWakeups on SQLite): its signal wraps the dispatcher's.
    // A calm event loop: on a loaded machine the real monitor reports the loop busy and the turns
    // are throttled (the handoff left for a search), which is the loop-lag tests' subject, not this file's.
    const calm = { maxSince: () => 0, busy: () => false, stop: () => undefined };
    engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig({ webhooks: { pollIntervalMs: 60_000, ...webhooks } }), secretBox: box, wakeups: noWakeups, loopLag: calm });
    engine.start();
    return engine;
  }

  it('an offer carries what the claim would read: URL, breaker keys, body, secret and scheme, for the launch and for an endpoint', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: SECRET, box });
    await createEndpoint({ db: tdb.db, clock, secretBox: box }, 'acme', { url: `${receiver.url}/endpoint`, events: ['launch.step_complete'], description: null, signatureScheme: 'standard' });
    const handoff = await commitWithHandoff(launchId, 2);
    expect(handoff.complete).toBe(true);
    expect(handoff.offers).toHaveLength(4);
    const rows = await tdb.db.selectFrom('deliveries').select(['id', 'url', 'host', 'endpoint', 'launch_id', 'event_id']).execute();
    const contexts = await loadDeliveryContexts(
      tdb.db,
      rows.map((r) => r.id),
    );
    for (const offer of handoff.offers) {
      const row = rows.find((r) => r.id === offer.id);
      expect(row).toBeDefined();
      expect({ url: offer.url, host: offer.host, endpoint: offer.endpoint, launch_id: offer.launchId, event_id: offer.eventId }).toEqual({ url: row!.url, host: row!.host, endpoint: row!.endpoint, launch_id: row!.launch_id, event_id: row!.event_id });
      expect(offer.ctx).toEqual(contexts.get(offer.id));
    }
    expect(handoff.offers.map((o) => o.ctx.scheme).sort()).toEqual(['service', 'service', 'standard', 'standard']);
  });

  it('a launch whose sealed secret the caller did not read hands nothing over: the dispatcher searches as before', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: SECRET, box });
    const handoff = newHandoff();
    await tdb.db.transaction().execute(async (trx) => {
      await insertEvents(trx, clock, { launchId, webhookUrl: receiver.url, owner: 'acme', firstSequence: 1 }, [{ event: 'launch.processing', data: {} }], handoff);
    });
    expect(handoff).toEqual({ offers: [], complete: false });
  });

  it.skipIf(onPostgres)('a handed-over delivery is sent, signed and logged as attempt 1 without the claim searching the table', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: SECRET, box });
    const dispatcher = startEngine();
    await engine!.dispatcher.runOnce(); // the loop's first pass is over; it now sleeps for a minute
    const seen = await countingSearches(async () => {
      const handoff = await commitWithHandoff(launchId, 1);
      dispatcher.signal.notify(handoff);
      await waitFor(() => receiver.requests.length === 1);
      await waitFor(() => dispatcher.dispatcher.inFlight() === 0);
      await new Promise((r) => setTimeout(r, 20)); // the settle turn has run
    });
    expect(seen).toEqual({ walks: 0, contextReads: 0 });
    const [req] = receiver.requests;
    expect(req!.headers['x-service-attempt']).toBe('1');
    expect(verifyWebhook<{ launchId: string }>(req!.body, req!.headers, SECRET, { toleranceSeconds: 300, now: clock.now() }).payload.launchId).toBe(launchId);
    expect(await tdb.db.selectFrom('deliveries').select(['status', 'attempt_count', 'lease_owner']).execute()).toEqual([{ status: 'delivered', attempt_count: 1, lease_owner: null }]);
    expect(await tdb.db.selectFrom('delivery_attempts').select(['attempt', 'outcome']).execute()).toEqual([{ attempt: 1, outcome: 'success' }]);
  });

  it('a destination changed after the commit is not sent on the stale offer: the delivery goes to the new URL, signed with the new secret', async () => {
    const other = await startReceiver(clock);
    try {
      const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: SECRET, box });
      const dispatcher = startEngine();
      await dispatcher.dispatcher.runOnce();
      const handoff = await commitWithHandoff(launchId, 1);
      await updateLaunchDestination({ db: tdb.db, clock, secretBox: box }, launchId, undefined, { webhookUrl: other.url, webhookSecret: 'whsec_the_new_secret_0123' });
      dispatcher.signal.notify(handoff); // stale now: the old URL and secret
      await waitFor(() => other.requests.length === 1);
      await waitFor(() => dispatcher.dispatcher.inFlight() === 0);
      expect(receiver.requests).toHaveLength(0);
      expect(verifyWebhook<{ launchId: string }>(other.requests[0]!.body, other.requests[0]!.headers, 'whsec_the_new_secret_0123', { toleranceSeconds: 300, now: clock.now() }).payload.launchId).toBe(launchId);
    } finally {
      await other.close();
    }
  });

  it('a rotated endpoint secret is not signed with on a stale offer: the endpoint delivery is signed with the current one', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: SECRET, box });
    const deps = { db: tdb.db, clock, secretBox: box };
    const { endpoint } = await createEndpoint(deps, 'acme', { url: `${receiver.url}/endpoint`, events: ['launch.step_complete'], description: null, signatureScheme: 'service' });
    const dispatcher = startEngine();
    await dispatcher.dispatcher.runOnce();
    const handoff = await commitWithHandoff(launchId, 1);
    // Rotated with no overlap: only the new secret is valid from now on.
    const { secret } = await rotateEndpointSecret(deps, endpoint.id, 'acme', 0);
    dispatcher.signal.notify(handoff); // stale now for the endpoint's delivery
    await waitFor(() => receiver.requests.length === 2);
    await waitFor(() => dispatcher.dispatcher.inFlight() === 0);
    const toEndpoint = receiver.requests.find((r) => r.url === '/hook/endpoint');
    expect(toEndpoint).toBeDefined();
    expect(verifyWebhook<{ launchId: string }>(toEndpoint!.body, toEndpoint!.headers, secret, { toleranceSeconds: 300, now: clock.now() }).payload.launchId).toBe(launchId);
  });

  it('offers beyond a host\'s cap are sent as its slots free, without waiting for the poll', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: SECRET, box });
    receiver.respond = () => ({ status: 200, delayMs: 20 });
    const dispatcher = startEngine({ maxInFlightPerHost: 2 });
    await dispatcher.dispatcher.runOnce();
    dispatcher.signal.notify(await commitWithHandoff(launchId, 7));
    await waitFor(() => receiver.requests.length === 7);
    expect(new Set(receiver.requests.map((r) => JSON.parse(r.body).sequence as number)).size).toBe(7);
  });

  it.skipIf(onPostgres)('offers beyond a host\'s cap wait in the dispatcher and are leased by id as slots free: the table is never searched for them', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: SECRET, box });
    receiver.respond = () => ({ status: 200, delayMs: 20 });
    // Cap 2 and no prefetch: 9 offers need at least five turns, each after a settle.
    const dispatcher = startEngine({ maxInFlightPerHost: 2, prefetchPerHost: 0 });
    await dispatcher.dispatcher.runOnce(); // the loop's first pass is over; it now sleeps for a minute
    const seen = await countingSearches(async () => {
      dispatcher.signal.notify(await commitWithHandoff(launchId, 9));
      await waitFor(() => receiver.requests.length === 9, 10_000);
      await waitFor(() => dispatcher.dispatcher.inFlight() === 0, 10_000);
      await new Promise((r) => setTimeout(r, 20)); // the last settle turn has run
    });
    expect(seen).toEqual({ walks: 0, contextReads: 0 });
    expect(new Set(receiver.requests.map((r) => JSON.parse(r.body).sequence as number)).size).toBe(9);
    const rows = await tdb.db.selectFrom('deliveries').select(['status', 'attempt_count']).execute();
    expect(rows).toEqual(Array.from({ length: 9 }, () => ({ status: 'delivered', attempt_count: 1 })));
  });
});
