import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine, type WebhookEngine } from '../../src/webhooks/engine.js';
import { onPostgres } from '../support/database.js';
import { commitEvents, createTestDb, engineConfig, insertLaunch, newSecretBox, startReceiver, type Receiver, type TestDb } from '../support/webhooks.js';

const CAP = 4;
const EVENTS = 48;

/**
 * Leasing ahead (docs/architecture.md, "Webhook delivery"): the per-host cap bounds attempts in
 * flight, not leases. A dispatcher leases up to the cap plus the prefetch to one host, so a freed
 * slot takes the next delivery from its local queue, and the receiver never sees more than the cap
 * at once, from one instance or from two.
 */
describe('claiming ahead of the per-host cap', () => {
  let tdb: TestDb;
  let receiver: Receiver;
  const engines: WebhookEngine[] = [];
  /** Requests the receiver has and has not answered yet, now and at most. */
  let open = 0;
  let maxOpen = 0;

  beforeEach(async () => {
    tdb = await createTestDb();
    receiver = await startReceiver(systemClock);
    open = maxOpen = 0;
    receiver.respond = () => {
      open += 1;
      maxOpen = Math.max(maxOpen, open);
      // Counted down just before the answer is written: no attempt can start on it before that.
      setTimeout(() => (open -= 1), 25);
      return { status: 200, delayMs: 25 };
    };
  });
  afterEach(async () => {
    for (const engine of engines.splice(0)) await engine.stop();
    await receiver.close();
    await tdb.close();
  });

  /** Starts `instances` engines on the database, samples the live leases until every event was delivered, and returns the most seen at once. */
  async function drain(instances: number): Promise<{ maxLeased: number; eventIds: string[] }> {
    const box = newSecretBox();
    const launchId = await insertLaunch(tdb.db, systemClock, { url: receiver.url, secret: 'whsec_prefetch', box });
    const eventIds = await commitEvents(tdb.db, systemClock, launchId, EVENTS);
    for (let i = 0; i < instances; i++) {
      const engine = createWebhookEngine({ db: tdb.db, clock: systemClock, logger: silentLogger(), config: engineConfig({ webhooks: { maxInFlightPerHost: CAP, maxInFlight: 16 } }), secretBox: box });
      engines.push(engine);
      engine.start();
    }
    let maxLeased = 0;
    const deadline = Date.now() + 20_000;
    for (;;) {
      const { leased, delivered } = await tdb.db
        .selectFrom('deliveries')
        .select((eb) => [
          eb.fn.sum<number>(eb.case().when(eb.and([eb('status', '=', 'pending'), eb('lease_owner', 'is not', null)])).then(1).else(0).end()).as('leased'),
          eb.fn.sum<number>(eb.case().when('status', '=', 'delivered').then(1).else(0).end()).as('delivered'),
        ])
        .executeTakeFirstOrThrow();
      maxLeased = Math.max(maxLeased, Number(leased ?? 0));
      if (Number(delivered ?? 0) === EVENTS) break;
      if (Date.now() > deadline) throw new Error(`${Number(delivered ?? 0)} of ${EVENTS} delivered in time`);
      await new Promise((r) => setTimeout(r, 5));
    }
    return { maxLeased, eventIds };
  }

  it('one instance holds leased deliveries beyond the cap in its local queue, while the receiver never has more than the cap in flight', async () => {
    const { maxLeased, eventIds } = await drain(1);
    expect(maxLeased).toBeGreaterThan(CAP); // leased ahead: the cap plus the prefetch (the cap again)
    expect(maxLeased).toBeLessThanOrEqual(2 * CAP);
    expect(maxOpen).toBe(CAP); // the cap reached, never passed
    expect(new Set(receiver.requests.map((r) => r.headers['x-service-event-id'])).size).toBe(EVENTS);
    expect(eventIds.length).toBe(EVENTS);
  });

  it.runIf(onPostgres)('two instances on one database together never have more than the cap in flight to the host (PostgreSQL)', async () => {
    const { maxLeased } = await drain(2);
    expect(maxLeased).toBeGreaterThan(CAP);
    expect(maxLeased).toBeLessThanOrEqual(2 * CAP);
    expect(maxOpen).toBeLessThanOrEqual(CAP);
    expect(maxOpen).toBeGreaterThan(1);
  });
});
