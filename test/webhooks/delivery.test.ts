import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { retryDeadLetter } from '../../src/deadLetters/retry.js';
import { redeliverEvent } from '../../src/webhooks/redeliver.js';
import { createWebhookEngine, type WebhookEngine } from '../../src/webhooks/engine.js';
import { verifyWebhook, WebhookVerificationError } from '../../packages/webhooks/src/index.js';
import { commitEvents, createTestDb, insertLaunch, newSecretBox, startReceiver, engineConfig, type ReceivedRequest, type Receiver, type TestDb } from '../support/webhooks.js';

const SECRET = 'whsec_delivery_test_secret';

/** The receiver's own check, written from docs/delivery.md alone (it does not use our verify helper). */
function receiverAccepts(req: ReceivedRequest, secret: string, nowMs: number): boolean {
  const stamp = String(req.headers['x-service-timestamp'] ?? '');
  const given = String(req.headers['x-service-signature'] ?? '');
  const expected = `sha256=${createHmac('sha256', secret).update(`${stamp}.${req.body}`).digest('hex')}`;
  const fresh = /^\d+$/.test(stamp) && Math.abs(nowMs / 1000 - Number(stamp)) <= 300;
  return fresh && given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected));
}

describe('webhook delivery', () => {
  let tdb: TestDb;
  let receiver: Receiver;
  let engine: WebhookEngine;
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const box = newSecretBox();

  beforeEach(async () => {
    tdb = await createTestDb();
    receiver = await startReceiver(clock);
    engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig(), secretBox: box });
  });
  afterEach(async () => {
    await engine.stop();
    await receiver.close();
    await tdb.close();
  });

  it('signs every attempt afresh over identical body bytes, with the exact headers, on the 30 s / 2 min / 10 min / 1 h schedule', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: SECRET, box });
    const [eventId] = await commitEvents(tdb.db, clock, launchId, 1);
    let calls = 0;
    receiver.respond = () => (++calls < 5 ? { status: 500, body: 'try later' } : { status: 204 });

    expect(await engine.dispatcher.runOnce()).toBe(1);
    for (const delay of [30_000, 120_000, 600_000, 3_600_000]) {
      clock.advance(delay - 1);
      expect(await engine.dispatcher.runOnce()).toBe(0);
      clock.advance(1);
      expect(await engine.dispatcher.runOnce()).toBe(1);
    }

    const reqs = receiver.requests;
    expect(reqs).toHaveLength(5);
    expect(reqs.slice(1).map((r, i) => r.at - reqs[i]!.at)).toEqual([30_000, 120_000, 600_000, 3_600_000]);
    expect(new Set(reqs.map((r) => r.body)).size).toBe(1);
    expect(new Set(reqs.map((r) => r.headers['x-service-timestamp'])).size).toBe(5);
    reqs.forEach((r, i) => {
      expect(receiverAccepts(r, SECRET, r.at)).toBe(true);
      expect(r.headers['x-service-timestamp']).toBe(String(Math.floor(r.at / 1000)));
      expect(r.method).toBe('POST');
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['x-service-event']).toBe('launch.step_complete');
      expect(r.headers['x-service-event-id']).toBe(eventId);
      expect(r.headers['x-service-attempt']).toBe(String(i + 1));
      expect(r.headers['x-request-id']).toBe('req_0');
      expect(r.headers['user-agent']).toMatch(/^LaunchService-Webhooks\//);
    });
    // The fifth attempt, an hour and more after the event, still verifies against the receiver's clock.
    expect(receiverAccepts(reqs[4]!, SECRET, clock.now())).toBe(true);
    expect(receiverAccepts(reqs[0]!, SECRET, clock.now())).toBe(false);
    const envelope = JSON.parse(reqs[0]!.body) as Record<string, unknown>;
    expect(envelope).toMatchObject({ id: eventId, event: 'launch.step_complete', launchId, sequence: 1, data: { step: 'create_mint', index: 0 } });
    expect(new Date(envelope.timestamp as string).toISOString()).toBe(envelope.timestamp);

    const delivery = await tdb.db.selectFrom('deliveries').selectAll().executeTakeFirstOrThrow();
    expect(delivery).toMatchObject({ status: 'delivered', attempt_count: 5, last_status_code: 204, lease_owner: null });
    const attempts = await tdb.db.selectFrom('delivery_attempts').selectAll().orderBy('attempt').execute();
    expect(attempts.map((a) => [a.attempt, a.status_code, a.outcome, a.error_class])).toEqual([
      [1, 500, 'failure', 'http_status'],
      [2, 500, 'failure', 'http_status'],
      [3, 500, 'failure', 'http_status'],
      [4, 500, 'failure', 'http_status'],
      [5, 204, 'success', null],
    ]);
    expect(attempts[0]!.response_body).toBe('try later');
  });

  it('fails the delivery after the fifth failure, dead-letters it, and delivers again when the dead letter is retried', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: SECRET, box, owner: 'globex' });
    const [eventId] = await commitEvents(tdb.db, clock, launchId, 1, 'launch.failed');
    receiver.respond = () => ({ status: 503, body: 'x'.repeat(5000) });
    for (const delay of [0, 30_000, 120_000, 600_000, 3_600_000]) {
      clock.advance(delay);
      expect(await engine.dispatcher.runOnce()).toBe(1);
    }
    clock.advance(24 * 3_600_000);
    expect(await engine.dispatcher.runOnce()).toBe(0);
    expect(receiver.requests).toHaveLength(5);

    const failed = await tdb.db.selectFrom('deliveries').selectAll().executeTakeFirstOrThrow();
    expect(failed).toMatchObject({ status: 'failed', attempt_count: 5, last_status_code: 503 });
    const attempts = await tdb.db.selectFrom('delivery_attempts').selectAll().execute();
    expect(attempts.every((a) => a.response_body?.length === 2048)).toBe(true);
    const dl = await tdb.db.selectFrom('dead_letters').selectAll().executeTakeFirstOrThrow();
    expect(dl).toMatchObject({ kind: 'delivery', owner: 'globex', launch_id: launchId, delivery_id: failed.id, event_id: eventId, status: 'open' });

    receiver.respond = () => ({ status: 200 });
    const retried = await retryDeadLetter(
      {
        db: tdb.db,
        clock,
        requeueLaunch: async () => undefined,
        redeliver: async (trx, d) => void (await redeliverEvent(trx, clock, { eventId: d.event_id, launchId: d.launch_id, deliveryId: d.delivery_id })),
        wake: () => engine.signal.notify(),
      },
      dl,
    );
    expect(retried).toMatchObject({ status: 'retried', retry_count: 1 });
    await engine.dispatcher.drain();
    expect(receiver.requests).toHaveLength(6);
    expect(receiver.requests[5]!.body).toBe(receiver.requests[0]!.body);
    expect(receiver.requests[5]!.headers['x-service-attempt']).toBe('1');
    const rows = await tdb.db.selectFrom('deliveries').select(['status', 'event_id']).orderBy('created_at').execute();
    expect(rows.map((r) => r.status).sort()).toEqual(['delivered', 'failed']);
    expect(new Set(rows.map((r) => r.event_id))).toEqual(new Set([eventId]));
  });

  it('verifyWebhook accepts a real delivery and rejects a tampered body and a timestamp 301 s off either way', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: SECRET, box });
    await commitEvents(tdb.db, clock, launchId, 1);
    await engine.dispatcher.drain();
    const req = receiver.requests[0]!;
    const ok = verifyWebhook<{ launchId: string }>(req.body, req.headers, SECRET, { toleranceSeconds: 300, now: clock.now() });
    expect(ok.payload.launchId).toBe(launchId);
    expect(ok.attempt).toBe(1);
    expect(verifyWebhook(Buffer.from(req.body), new Headers(req.headers as Record<string, string>), SECRET, { now: clock.now() + 300_000 }).event).toBe('launch.step_complete');

    const reason = (fn: () => unknown) => {
      try {
        fn();
        return 'accepted';
      } catch (error) {
        return error instanceof WebhookVerificationError ? error.reason : 'other';
      }
    };
    const tampered = req.body.replace('create_mint', 'create_pool');
    expect(reason(() => verifyWebhook(tampered, req.headers, SECRET, { now: clock.now() }))).toBe('signature_mismatch');
    expect(reason(() => verifyWebhook(req.body, req.headers, 'whsec_wrong', { now: clock.now() }))).toBe('signature_mismatch');
    expect(reason(() => verifyWebhook(req.body, req.headers, SECRET, { now: clock.now() + 301_000 }))).toBe('timestamp_too_old');
    expect(reason(() => verifyWebhook(req.body, req.headers, SECRET, { now: clock.now() - 301_000 }))).toBe('timestamp_too_new');
    expect(reason(() => verifyWebhook(req.body, { ...req.headers, 'x-service-signature': 'sha256=abc' }, SECRET, { now: clock.now() }))).toBe('malformed_signature');
    expect(reason(() => verifyWebhook(req.body, {}, SECRET))).toBe('missing_header');

    // A signature made 301 s ago by the sender's own rules fails, even with the right secret.
    const old = Math.floor(clock.now() / 1000) - 301;
    const sig = createHmac('sha256', SECRET).update(`${old}.${req.body}`).digest('hex');
    const oldHeaders = { 'x-service-timestamp': String(old), 'x-service-signature': `sha256=${sig}` };
    expect(reason(() => verifyWebhook(req.body, oldHeaders, SECRET, { now: clock.now() }))).toBe('timestamp_too_old');
  });
});
