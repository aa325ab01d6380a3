import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createExampleReceiver, describeEvent, type ReceivedEvent } from '../../scripts/example-receiver.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine, type WebhookEngine } from '../../src/webhooks/engine.js';
import { redeliverEvent } from '../../src/webhooks/redeliver.js';
import { commitEvents, createTestDb, insertLaunch, newSecretBox, engineConfig, type TestDb } from '../support/webhooks.js';

describe('the example receiver (scripts/example-receiver.ts)', () => {
  let tdb: TestDb;
  let engine: WebhookEngine;
  let server: ReturnType<typeof createExampleReceiver>;
  let url: string;
  const processed: ReceivedEvent[] = [];
  const duplicates: ReceivedEvent[] = [];
  const clock = manualClock(Date.now()); // the receiver checks timestamps against its own wall clock
  const box = newSecretBox();

  beforeEach(async () => {
    processed.length = 0;
    duplicates.length = 0;
    tdb = await createTestDb();
    engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig(), secretBox: box });
    server = createExampleReceiver({ secret: 'whsec_example', onEvent: (e) => void processed.push(e), onDuplicate: (e) => void duplicates.push(e) });
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
    // Events committed in the same millisecond may be delivered in any order (parallel attempts).
    expect(processed.map((e) => e.sequence).sort()).toEqual([1, 2, 3]);
    expect(duplicates.map((e) => e.id)).toEqual([first]);
  });

  it('prints the step of a step_complete, the mint of a complete and the error of a failed launch', () => {
    const base = { id: 'evt_1', timestamp: '2026-06-01T12:00:00.000Z', launchId: 'lch_1' };
    expect(describeEvent({ ...base, sequence: 3, event: 'launch.step_complete', data: { step: 'create_mint', index: 1, total: 3 } })).toBe(
      '#3 launch.step_complete create_mint (1/3)  launch=lch_1 id=evt_1',
    );
    expect(describeEvent({ ...base, sequence: 6, event: 'launch.complete', data: { mint: 'Mint111' } })).toBe('#6 launch.complete mint Mint111  launch=lch_1 id=evt_1');
    expect(describeEvent({ ...base, sequence: 4, event: 'launch.failed', data: { error: { step: 'create_dao', code: 'program_error' } } })).toBe(
      '#4 launch.failed create_dao: program_error  launch=lch_1 id=evt_1',
    );
    expect(describeEvent({ ...base, sequence: 1, event: 'launch.queued', data: {} })).toBe('#1 launch.queued  launch=lch_1 id=evt_1');
  });

  it('answers 401 to a delivery signed with another secret', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url, secret: 'whsec_someone_else', box });
    await commitEvents(tdb.db, clock, launchId, 1);
    await engine.dispatcher.runOnce();
    const row = await tdb.db.selectFrom('deliveries').select(['status', 'last_status_code']).executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'pending', last_status_code: 401 });
  });
});
