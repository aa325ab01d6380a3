import { createHmac } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { webhookRoutes } from '../../src/app/routes.js';
import type { DeadLetterRow } from '../../src/db/schema.js';
import { createApp } from '../../src/http/app.js';
import { RateLimiter } from '../../src/http/middleware/rateLimit.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { WEBHOOK_EVENT_KINDS } from '../../src/webhooks/sampleEvents.js';
import { endpointKey } from '../../src/webhooks/endpointKey.js';
import { createWebhookService, type WebhookService } from '../../src/webhooks/service.js';
import { commitEvents, createTestDb, insertLaunch, newSecretBox, startReceiver, engineConfig, tenantKeys, type Receiver, type TestDb } from '../support/webhooks.js';

type Json = Record<string, any>;

describe('webhook, delivery and dead-letter routes', () => {
  let tdb: TestDb;
  let receiver: Receiver;
  let service: WebhookService;
  let app: ReturnType<typeof createApp>;
  let keys: { acme: string; acmeRead: string; globex: string; admin: string };
  const retriedLaunches: DeadLetterRow[] = [];
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const box = newSecretBox();

  const call = async (method: string, path: string, key?: string, body?: unknown) => {
    const headers: Record<string, string> = {};
    if (key) headers.authorization = `Bearer ${key}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await app.request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Json, text: '' };
  };

  beforeEach(async () => {
    tdb = await createTestDb();
    receiver = await startReceiver(clock);
    retriedLaunches.length = 0;
    service = createWebhookService({
      db: tdb.db,
      clock,
      logger: silentLogger(),
      // Breakers are covered elsewhere; here repeated failures to the one receiver must not pause it.
      config: engineConfig({ breaker: { failureThreshold: 1_000 } }),
      secretBox: box,
    });
    const routes = webhookRoutes({
      db: tdb.db,
      clock,
      engine: service.engine,
      testSecret: engineConfig().webhooks.testSecret,
      requeueLaunch: async (_trx, dl) => {
        retriedLaunches.push(dl);
      },
      wakeRunner: () => undefined,
    });
    app = createApp({ db: tdb.db, logger: silentLogger(), limiter: new RateLimiter(100_000, clock), bodyLimitBytes: 65_536, routes });
    const now = clock.now();
    keys = await tenantKeys(tdb.db, now);
  });
  afterEach(async () => {
    await service.stop();
    await receiver.close();
    await tdb.close();
  });

  describe('POST /api/webhooks/test', () => {
    it('reports the breaker of a host only to a caller that delivers there, or to an admin', async () => {
      const now = clock.now();
      const endpoint = `${receiver.url}`;
      const host = new URL(receiver.url).host;
      await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 'whsec_launch_secret_0001', box, owner: 'globex' });
      await tdb.db.insertInto('endpoint_breakers').values({ endpoint: endpointKey(endpoint), host, state: 'open', failures: 3, opened_at: now, updated_at: now }).execute();
      await service.breakers.load();
      const stranger = await call('POST', '/api/webhooks/test', keys.acmeRead, { webhookUrl: receiver.url, event: 'launch.complete' });
      expect(stranger.status).toBe(200);
      expect(stranger.body.result.breaker).toBeUndefined();
      expect(JSON.stringify(stranger.body)).not.toContain('"open"');
      const ownerView = await call('POST', '/api/webhooks/test', keys.globex, { webhookUrl: receiver.url, event: 'launch.complete' });
      expect(ownerView.body.result.breaker).toEqual({ host, state: 'open', failures: 3 });
      const adminView = await call('POST', '/api/webhooks/test', keys.admin, { webhookUrl: receiver.url, event: 'launch.complete' });
      expect(adminView.body.result.breaker).toEqual({ host, state: 'open', failures: 3 });
    });

    it('sends one signed sample event with the provided secret and reports the outcome and breaker', async () => {
      // The breaker of a host is reported to a caller that delivers there (here: a launch of acme's).
      await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 'whsec_launch_secret_0001', box, owner: 'acme' });
      const res = await call('POST', '/api/webhooks/test', keys.acmeRead, { webhookUrl: receiver.url, event: 'launch.complete', webhookSecret: 'whsec_mine' });
      expect(res.status).toBe(200);
      const host = new URL(receiver.url).host;
      expect(res.body.result).toMatchObject({ delivered: true, statusCode: 200, responseBody: 'ok', signedWith: 'provided', breaker: { host, state: 'closed', failures: 0 } });
      expect(res.body.result.durationMs).toBeTypeOf('number');
      expect(receiver.requests).toHaveLength(1);
      const req = receiver.requests[0]!;
      const expected = createHmac('sha256', 'whsec_mine').update(`${req.headers['x-service-timestamp']}.${req.body}`).digest('hex');
      expect(req.headers['x-service-signature']).toBe(`sha256=${expected}`);
      expect(req.headers['x-service-event']).toBe('launch.complete');
      const envelope = JSON.parse(req.body) as Json;
      expect(envelope).toMatchObject({ event: 'launch.complete', data: { dao: { realm: expect.any(String), treasury: expect.any(String) }, pool: { lpMint: expect.any(String) } } });
      expect(JSON.stringify(res.body)).not.toContain('whsec_mine');
    });

    it('signs with the server test secret when none is given and does not retry a failure', async () => {
      receiver.respond = () => ({ status: 500, body: 'nope' });
      const res = await call('POST', '/api/webhooks/test', keys.acme, { webhookUrl: receiver.url, event: 'launch.failed' });
      expect(res.body.result).toMatchObject({ delivered: false, statusCode: 500, responseBody: 'nope', signedWith: 'server_test_secret', error: { class: 'http_status' } });
      const req = receiver.requests[0]!;
      const expected = createHmac('sha256', 'whsec_server_test_secret').update(`${req.headers['x-service-timestamp']}.${req.body}`).digest('hex');
      expect(req.headers['x-service-signature']).toBe(`sha256=${expected}`);
      await service.engine.dispatcher.drain();
      expect(receiver.requests).toHaveLength(1);
    });

    it('refuses an unknown event kind listing the valid kinds, and requires a key', async () => {
      const bad = await call('POST', '/api/webhooks/test', keys.acme, { webhookUrl: receiver.url, event: 'launch.exploded' });
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('invalid_request');
      expect(bad.body.error.details.validKinds).toEqual([...WEBHOOK_EVENT_KINDS]);
      expect(bad.body.error.details.fields).toEqual([expect.objectContaining({ field: 'event' })]);
      expect((await call('POST', '/api/webhooks/test', undefined, { webhookUrl: receiver.url, event: 'launch.queued' })).status).toBe(401);
      expect(receiver.requests).toHaveLength(0);
    });
  });

  describe('deliveries', () => {
    it('lists a launch’s deliveries with every attempt to its owner and admin only', async () => {
      const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box, owner: 'acme' });
      const [eventId] = await commitEvents(tdb.db, clock, launchId, 2);
      receiver.respond = (r) => (r.headers['x-service-event-id'] === eventId && r.headers['x-service-attempt'] === '1' ? { status: 500 } : { status: 200 });
      await service.engine.dispatcher.drain();
      clock.advance(30_000);
      await service.engine.dispatcher.drain();

      const res = await call('GET', `/api/launches/${launchId}/deliveries`, keys.acmeRead);
      expect(res.status).toBe(200);
      const first = res.body.deliveries[0] as Json;
      expect(first).toMatchObject({ eventId, event: 'launch.step_complete', sequence: 1, status: 'delivered', attemptCount: 2, nextAttemptAt: null });
      expect(first.attempts.map((a: Json) => [a.attempt, a.statusCode, a.outcome])).toEqual([
        [1, 500, 'failure'],
        [2, 200, 'success'],
      ]);
      expect(res.body.deliveries).toHaveLength(2);
      expect((await call('GET', `/api/launches/${launchId}/deliveries`, keys.globex)).status).toBe(404);
      expect((await call('GET', `/api/launches/${launchId}/deliveries`, keys.admin)).body.deliveries).toHaveLength(2);
      expect((await call('GET', '/api/launches/lch_missing/deliveries', keys.acme)).status).toBe(404);
    });

    it('redelivers an event as a fresh attempt series, only for its owner', async () => {
      const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box, owner: 'acme' });
      await commitEvents(tdb.db, clock, launchId, 1);
      await service.engine.dispatcher.drain();
      const original = await tdb.db.selectFrom('deliveries').selectAll().executeTakeFirstOrThrow();

      expect((await call('POST', `/api/deliveries/${original.id}/redeliver`, keys.globex)).status).toBe(404);
      expect((await call('POST', `/api/deliveries/${original.id}/redeliver`, keys.acmeRead)).status).toBe(403);
      const res = await call('POST', `/api/deliveries/${original.id}/redeliver`, keys.acme);
      expect(res.status).toBe(202);
      expect(res.body.delivery).toMatchObject({ eventId: original.event_id, status: 'pending', attemptCount: 0, attempts: [] });
      expect(res.body.delivery.id).not.toBe(original.id);
      await service.engine.dispatcher.drain();
      expect(receiver.requests).toHaveLength(2);
      expect(receiver.requests[1]!.body).toBe(receiver.requests[0]!.body);
      expect(receiver.requests[1]!.headers['x-service-attempt']).toBe('1');
    });
  });

  describe('dead letters', () => {
    async function failOneDelivery(owner: string): Promise<string> {
      const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box, owner });
      await commitEvents(tdb.db, clock, launchId, 1);
      receiver.respond = () => ({ status: 500 });
      for (const delay of [0, 30_000, 120_000, 600_000, 3_600_000]) {
        clock.advance(delay);
        await service.engine.dispatcher.drain();
      }
      receiver.respond = () => ({ status: 200 });
      return launchId;
    }

    it('lists with filters and pagination, admin only', async () => {
      await failOneDelivery('acme');
      await failOneDelivery('globex');
      const now = clock.now();
      await tdb.db
        .insertInto('dead_letters')
        .values({ id: 'dlq_launch1', kind: 'launch', owner: 'acme', launch_id: 'lch_x', delivery_id: null, event_id: null, step: 'create_pool', error_code: 'insufficient_balance', error_message: 'low', status: 'open', created_at: now, updated_at: now, resolved_at: null })
        .execute();
      expect((await call('GET', '/api/dead-letters', keys.acme)).status).toBe(403);
      const all = await call('GET', '/api/dead-letters?limit=2', keys.admin);
      expect(all.status).toBe(200);
      expect(all.body.pagination).toEqual({ limit: 2, offset: 0, returned: 2, total: 3, has_more: true, next_offset: 2 });
      const rest = await call('GET', '/api/dead-letters?limit=2&offset=2', keys.admin);
      expect(rest.body.pagination).toMatchObject({ returned: 1, has_more: false, next_offset: null });
      const deliveriesOnly = await call('GET', '/api/dead-letters?kind=delivery&status=open', keys.admin);
      expect(deliveriesOnly.body.deadLetters).toHaveLength(2);
      expect(deliveriesOnly.body.deadLetters[0]).toMatchObject({ kind: 'delivery', status: 'open', errorCode: 'delivery_failed', retryCount: 0 });
      const bad = await call('GET', '/api/dead-letters?kind=nope&limit=500', keys.admin);
      expect(bad.status).toBe(400);
      expect(bad.body.error.details.fields.map((f: Json) => f.field)).toEqual(['kind']);
      expect((await call('GET', '/api/dead-letters?limit=0', keys.admin)).status).toBe(400);
    });

    it('retries a delivery dead letter by redelivering, refuses a second retry, and resolves', async () => {
      await failOneDelivery('acme');
      const dl = await tdb.db.selectFrom('dead_letters').selectAll().executeTakeFirstOrThrow();
      const res = await call('POST', `/api/dead-letters/${dl.id}/retry`, keys.admin);
      expect(res.status).toBe(202);
      expect(res.body.deadLetter).toMatchObject({ id: dl.id, kind: 'delivery', status: 'retried', retryCount: 1, deliveryId: dl.delivery_id, eventId: dl.event_id });
      await service.engine.dispatcher.drain();
      expect(receiver.requests).toHaveLength(6);
      expect(receiver.requests[5]!.body).toBe(receiver.requests[0]!.body);
      expect((await call('POST', `/api/dead-letters/${dl.id}/retry`, keys.admin)).status).toBe(409);
      const resolved = await call('POST', `/api/dead-letters/${dl.id}/resolve`, keys.admin);
      expect(resolved.body.deadLetter).toMatchObject({ status: 'resolved', resolvedAt: new Date(clock.now()).toISOString() });
      expect((await call('POST', '/api/dead-letters/dlq_missing/resolve', keys.admin)).status).toBe(404);
    });

    it('hands a launch dead letter to the launch requeue', async () => {
      const now = clock.now();
      await tdb.db
        .insertInto('dead_letters')
        .values({ id: 'dlq_launch2', kind: 'launch', owner: 'acme', launch_id: 'lch_y', delivery_id: null, event_id: null, step: 'create_dao', error_code: 'program_error', error_message: 'boom', status: 'open', created_at: now, updated_at: now, resolved_at: null })
        .execute();
      const res = await call('POST', '/api/dead-letters/dlq_launch2/retry', keys.admin);
      expect(res.status).toBe(202);
      expect(res.body.deadLetter).toMatchObject({ kind: 'launch', status: 'retried', step: 'create_dao' });
      expect(retriedLaunches.map((d) => [d.id, d.step])).toEqual([['dlq_launch2', 'create_dao']]);
    });
  });
});
