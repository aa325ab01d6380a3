import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createExampleReceiver, type ReceivedEvent } from '../../scripts/example-receiver.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine, type WebhookEngine } from '../../src/webhooks/engine.js';
import { redeliverEvent } from '../../src/webhooks/redeliver.js';
import { commitEvents, createTestDb, insertLaunch, newSecretBox, testConfig, type TestDb } from './helpers.js';

describe('the example receiver (scripts/example-receiver.ts)', () => {
  let tdb: TestDb;
  let engine: WebhookEngine;
  let server: ReturnType<typeof createExampleReceiver>;
  let url: string;
  const processed: ReceivedEvent[] = [];
  const clock = manualClock(Date.now()); // the receiver checks timestamps against its own wall clock
  const box = newSecretBox();

  beforeEach(async () => {
    processed.length = 0;
    tdb = await createTestDb();
    engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: testConfig(), secretBox: box });
    server = createExampleReceiver({ secret: 'whsec_example', onEvent: (e) => void processed.push(e) });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  });
  afterEach(async () => {
    await engine.stop();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await tdb.close();
  });

  it('verifies and acknowledges every delivery, and processes a redelivered event only once', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url, secret: 'whsec_example', box });
    const [first] = await commitEvents(tdb.db, clock, launchId, 3);
    await engine.dispatcher.drain();
    await redeliverEvent(tdb.db, clock, { eventId: first!, launchId });
    await engine.dispatcher.drain();

    const deliveries = await tdb.db.selectFrom('deliveries').select(['status', 'last_status_code']).execute();
    expect(deliveries).toHaveLength(4);
    expect(deliveries.every((d) => d.status === 'delivered' && d.last_status_code === 200)).toBe(true);
    await new Promise((r) => setImmediate(r));
    expect(processed.map((e) => e.sequence)).toEqual([1, 2, 3]);
  });

  it('answers 401 to a delivery signed with another secret', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url, secret: 'whsec_someone_else', box });
    await commitEvents(tdb.db, clock, launchId, 1);
    await engine.dispatcher.runOnce();
    const row = await tdb.db.selectFrom('deliveries').select(['status', 'last_status_code']).executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'pending', last_status_code: 401 });
  });
});
