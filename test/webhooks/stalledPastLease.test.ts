import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { startLoopLagMonitor } from '../../src/lib/loopLag.js';
import { createWebhookEngine, type WebhookEngine } from '../../src/webhooks/engine.js';
import { commitEvents, createTestDb, engineConfig, insertLaunch, startReceiver, type Receiver, type TestDb } from '../support/webhooks.js';

/** Keeps this thread busy, as a process stopped or swapped out would be. */
function stall(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy
  }
}

const TIMEOUT_MS = 400;
// The engine leases an attempt for at least its timeout + 5 s (src/webhooks/engine.ts).
const LEASE_MS = TIMEOUT_MS + 5_000;

/**
 * An attempt in flight while this process stalls past its lease: its answer arrives during the
 * stall, and the attempt's deadline gives the stall back (src/webhooks/httpClient.ts), so the answer
 * is read — settled under the claim's token when nobody took the delivery meanwhile, and never sent
 * again when another claim took it.
 */
describe('an attempt in flight while the dispatcher stalls past its lease', () => {
  let tdb: TestDb;
  let receiver: Receiver;
  let engine: WebhookEngine | undefined;
  const lag = startLoopLagMonitor({ intervalMs: 10 });
  beforeEach(async () => {
    tdb = await createTestDb();
  });
  afterAll(() => lag.stop());
  afterEach(async () => {
    await engine?.stop();
    await receiver.close();
    await tdb.close();
  });

  async function setUp(onFirst: () => Promise<void>) {
    const clock = manualClock(Date.now());
    receiver = await startReceiver(clock);
    const box = createSecretBox(randomBytes(32));
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 'whsec_stall', box });
    const [eventId] = await commitEvents(tdb.db, clock, launchId, 1);
    let first = true;
    receiver.respond = () => {
      if (first) {
        first = false;
        // The answer goes out; this process then stalls (1.3 s: past the attempt's timeout and the
        // client's lag tolerance) while its lease clock runs past the lease.
        void onFirst().then(() => {
          clock.advance(2 * LEASE_MS);
          setImmediate(() => stall(1_300));
        });
      }
      return { status: 200, body: 'ok' };
    };
    engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig({ webhooks: { timeoutMs: TIMEOUT_MS, leaseMs: 2_000 } }), secretBox: box, loopLag: lag });
    return { clock, eventId: eventId! };
  }

  it('reads the answer that arrived during the stall when nobody took the delivery meanwhile: delivered on its first attempt, sent once', async () => {
    // The attempt's deadline gives this process's own stall back (src/webhooks/httpClient.ts), so the
    // answer already in the socket is read instead of timing out and being sent again.
    const { eventId } = await setUp(async () => undefined);
    await engine!.dispatcher.runOnce();
    expect(receiver.requests.map((r) => r.headers['x-service-event-id'])).toEqual([eventId]);
    const row = await tdb.db.selectFrom('deliveries').select(['status', 'attempt_count']).executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'delivered', attempt_count: 1 });
  });

  it('does not send again when another claim took the delivery meanwhile, and leaves that claim alone', async () => {
    const { eventId } = await setUp(async () => {
      // Another dispatcher's claim: a new owner and token, as a claim after the lease expired makes.
      await tdb.db.updateTable('deliveries').set((eb) => ({ lease_owner: 'dsp_other', lease_token: eb('lease_token', '+', 1), attempt_count: eb('attempt_count', '+', 1) })).execute();
    });
    await engine!.dispatcher.runOnce();
    expect(receiver.requests.map((r) => r.headers['x-service-event-id'])).toEqual([eventId]);
    const row = await tdb.db.selectFrom('deliveries').select(['status', 'lease_owner', 'attempt_count']).executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'pending', lease_owner: 'dsp_other', attempt_count: 2 });
  });
});
