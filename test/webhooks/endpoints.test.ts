import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../packages/webhooks/src/index.js';
import { webhookRoutes } from '../../src/app/routes.js';
import { createApp } from '../../src/http/app.js';
import { RateLimiter } from '../../src/http/middleware/rateLimit.js';
import { createLaunchDestinationRoutes } from '../../src/http/routes/launchDestination.js';
import { createWebhookEndpointRoutes } from '../../src/http/routes/webhookEndpoints.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { parseDestinationPatch } from '../../src/launches/updateDestination.js';
import { parseEndpointCreate, webhookUrlProblem } from '../../src/webhooks/endpoints/request.js';
import { endpointKey } from '../../src/webhooks/endpointKey.js';
import { createWebhookService, type WebhookService } from '../../src/webhooks/service.js';
import { commitEvents, createTestDb, insertLaunch, newSecretBox, startReceiver, engineConfig, tenantKeys, type Receiver, type ReceivedRequest, type TestDb } from '../support/webhooks.js';

type Json = Record<string, any>;

/**
 * Standard Webhooks verification written from the specification (https://www.standardwebhooks.com),
 * independent of the project's package: HMAC-SHA256 keyed with the base64 bytes after `whsec_`, over
 * `<webhook-id>.<webhook-timestamp>.<body>`, base64, `v1,` prefix, space-separated list.
 */
function standardWebhooksVerify(secret: string, headers: ReceivedRequest['headers'], body: string): boolean {
  const id = headers['webhook-id'] as string;
  const ts = headers['webhook-timestamp'] as string;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest();
  return String(headers['webhook-signature'])
    .split(' ')
    .some((entry) => {
      const [version, sig] = entry.split(',');
      const given = Buffer.from(sig ?? '', 'base64');
      return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
    });
}

describe('webhook endpoints (docs/webhooks.md)', () => {
  let tdb: TestDb;
  let launchReceiver: Receiver;
  let hooks: Receiver[];
  let service: WebhookService;
  let app: ReturnType<typeof createApp>;
  let keys: { acme: string; acmeRead: string; globex: string; admin: string };
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const box = newSecretBox();
  const LAUNCH_SECRET = 'whsec_launch_secret_0001';

  const call = async (method: string, path: string, key?: string, body?: unknown) => {
    const headers: Record<string, string> = {};
    if (key) headers.authorization = `Bearer ${key}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await app.request(`/api${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: (text === '' ? {} : JSON.parse(text)) as Json };
  };
  const createEndpoint = async (body: Json, key = keys.acme) => {
    const res = await call('POST', '/webhook-endpoints', key, body);
    expect(res.status).toBe(201);
    return res.body.endpoint as Json;
  };
  const drain = () => service.engine.dispatcher.drain();
  const events = (r: Receiver) => r.requests.map((q) => (JSON.parse(q.body) as Json).event as string);

  let running: WebhookService | undefined;
  async function build(options: { schedule?: number[]; disableAfterMs?: number } = {}) {
    await running?.stop();
    const config = engineConfig({ breaker: { failureThreshold: 1_000 }, webhooks: options.schedule ? { retrySchedule: options.schedule } : {} });
    service = createWebhookService({ db: tdb.db, clock, logger: silentLogger(), config: { ...config, endpoints: { disableAfterMs: options.disableAfterMs ?? 5 * 86_400_000 } }, secretBox: box });
    running = service;
    const deps = { db: tdb.db, clock, secretBox: box, production: false, signal: service.signal };
    app = createApp({
      db: tdb.db,
      logger: silentLogger(),
      limiter: new RateLimiter(100_000, clock),
      bodyLimitBytes: 65_536,
      routes: [
        ['/webhook-endpoints', createWebhookEndpointRoutes(deps)],
        ['/launches', createLaunchDestinationRoutes(deps)],
        ...webhookRoutes({ db: tdb.db, clock, engine: service.engine, testSecret: 'whsec_test', requeueLaunch: async () => undefined, wakeRunner: () => undefined }),
      ],
    });
  }

  beforeEach(async () => {
    tdb = await createTestDb();
    launchReceiver = await startReceiver(clock, '/launch');
    hooks = [await startReceiver(clock, '/a'), await startReceiver(clock, '/b'), await startReceiver(clock, '/c')];
    await build();
    const now = clock.now();
    keys = await tenantKeys(tdb.db, now);
  });
  afterEach(async () => {
    await running?.stop();
    running = undefined;
    for (const r of [launchReceiver, ...hooks]) await r.close();
    await tdb.close();
  });

  it('fans every event out to each matching enabled endpoint of the owner, besides the launch URL', async () => {
    const complete = await createEndpoint({ url: hooks[0]!.url, events: ['launch.complete'] });
    const launchStar = await createEndpoint({ url: hooks[1]!.url, events: ['launch.*'], description: 'all launch events' });
    await createEndpoint({ url: hooks[2]!.url }, keys.globex); // another owner's: never gets acme's events
    const launchId = await insertLaunch(tdb.db, clock, { url: launchReceiver.url, secret: LAUNCH_SECRET, box });
    await commitEvents(tdb.db, clock, launchId, 1, 'launch.queued');
    await commitEvents(tdb.db, clock, launchId, 2, 'launch.step_complete');
    await commitEvents(tdb.db, clock, launchId, 1, 'vesting.created');
    await commitEvents(tdb.db, clock, launchId, 1, 'launch.complete');
    await drain();

    // Deliveries to one destination run in parallel, so arrival order is not part of the promise.
    expect(events(launchReceiver).sort()).toEqual(['launch.complete', 'launch.queued', 'launch.step_complete', 'launch.step_complete', 'vesting.created']);
    expect(events(hooks[0]!)).toEqual(['launch.complete']);
    expect(events(hooks[1]!).sort()).toEqual(['launch.complete', 'launch.queued', 'launch.step_complete', 'launch.step_complete']);
    expect(hooks[2]!.requests).toHaveLength(0);
    // Each destination verifies with its own secret; the same event id reaches every destination.
    const [toComplete] = hooks[0]!.requests;
    const verified = verifyWebhook<Json>(toComplete!.body, toComplete!.headers, complete.secret as string, { now: clock.now() });
    expect(verified.payload.launchId).toBe(launchId);
    expect(() => verifyWebhook(toComplete!.body, toComplete!.headers, LAUNCH_SECRET, { now: clock.now() })).toThrow();
    const completeToLaunch = launchReceiver.requests.find((q) => (JSON.parse(q.body) as Json).event === 'launch.complete')!;
    expect(verifyWebhook<Json>(completeToLaunch.body, completeToLaunch.headers, LAUNCH_SECRET, { now: clock.now() }).payload.id).toBe(verified.payload.id);
    expect(hooks[1]!.requests.every((q) => verifyWebhook(q.body, q.headers, launchStar.secret as string, { now: clock.now() }))).toBe(true);

    // Every (event, destination) is its own delivery, listed with its endpoint and event body.
    const listed = await call('GET', `/launches/${launchId}/deliveries`, keys.acmeRead);
    expect(listed.body.deliveries).toHaveLength(5 + 1 + 4);
    const toEndpoint = (listed.body.deliveries as Json[]).find((d) => d.endpointId === complete.id)!;
    expect(toEndpoint).toMatchObject({ event: 'launch.complete', status: 'delivered', payload: { id: verified.payload.id, event: 'launch.complete', launchId } });
  });

  it('creates, shows, updates and deletes endpoints; the secret is shown once and stored sealed', async () => {
    const created = await createEndpoint({ url: hooks[0]!.url, events: ['launch.*', 'dao.created'], signatureScheme: 'standard' });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(Buffer.from((created.secret as string).slice(6), 'base64').length).toBeGreaterThanOrEqual(24);
    expect(created).toMatchObject({ url: hooks[0]!.url, events: ['launch.*', 'dao.created'], signatureScheme: 'standard', disabled: false, previousSecretExpiresAt: null });
    const stored = await tdb.db.selectFrom('webhook_endpoints').selectAll().executeTakeFirstOrThrow();
    expect(JSON.stringify(stored)).not.toContain((created.secret as string).slice(6));

    const got = await call('GET', `/webhook-endpoints/${created.id}`, keys.acmeRead);
    expect(got.status).toBe(200);
    expect(got.body.endpoint.secret).toBeUndefined();
    expect((await call('GET', `/webhook-endpoints/${created.id}`, keys.globex)).status).toBe(404);
    expect((await call('GET', '/webhook-endpoints', keys.globex)).body.endpoints).toEqual([]);
    const list = await call('GET', '/webhook-endpoints', keys.acmeRead);
    expect(list.body).toMatchObject({ endpoints: [{ id: created.id }], pagination: { total: 1, returned: 1, has_more: false } });
    expect((await call('POST', '/webhook-endpoints', keys.acmeRead, { url: hooks[1]!.url })).status).toBe(403);

    const patched = await call('PATCH', `/webhook-endpoints/${created.id}`, keys.acme, { events: ['launch.complete'], description: 'prod', url: hooks[1]!.url });
    expect(patched.body.endpoint).toMatchObject({ events: ['launch.complete'], description: 'prod', url: hooks[1]!.url });
    const disabled = await call('PATCH', `/webhook-endpoints/${created.id}`, keys.acme, { disabled: true });
    expect(disabled.body.endpoint).toMatchObject({ disabled: true, disabledReason: 'disabled_by_owner' });

    const bad = await call('POST', '/webhook-endpoints', keys.acme, { url: 'ftp://x', events: ['launch.nope', 'nope.*'], signatureScheme: 'md5', extra: 1 });
    expect(bad.status).toBe(400);
    expect((bad.body.error.details.fields as Json[]).map((f) => f.field).sort()).toEqual(['events[0]', 'events[1]', 'extra', 'signatureScheme', 'url']);

    expect((await call('DELETE', `/webhook-endpoints/${created.id}`, keys.globex)).status).toBe(404);
    expect((await call('DELETE', `/webhook-endpoints/${created.id}`, keys.acme)).status).toBe(204);
    expect((await call('GET', `/webhook-endpoints/${created.id}`, keys.acme)).status).toBe(404);
    expect(await tdb.db.selectFrom('webhook_endpoints').selectAll().execute()).toEqual([]);
  });

  it('PATCH /launches/{id} sends the pending events to the fixed URL with the new secret, and a retried dead letter too', async () => {
    await build({ schedule: [0, 30_000] });
    const dead = await startReceiver(clock, '/typo');
    dead.respond = () => ({ status: 404 });
    const launchId = await insertLaunch(tdb.db, clock, { url: dead.url, secret: LAUNCH_SECRET, box });
    await commitEvents(tdb.db, clock, launchId, 2, 'launch.step_complete');
    await drain();
    clock.advance(30_000);
    await commitEvents(tdb.db, clock, launchId, 1, 'launch.complete');
    await drain(); // the first two failed twice (dead letters), the third failed once and waits 30 s
    expect(dead.requests).toHaveLength(5);
    await dead.close();

    const fixedSecret = 'whsec_fixed_secret_000000001';
    const patched = await call('PATCH', `/launches/${launchId}`, keys.acme, { webhookUrl: launchReceiver.url, webhookSecret: fixedSecret });
    expect(patched.status).toBe(200);
    expect(patched.body.launch.webhookUrl).toBe(launchReceiver.url);
    expect(JSON.stringify(patched.body)).not.toContain(fixedSecret);
    await drain(); // the pending one is due at once at the new URL
    expect(events(launchReceiver)).toEqual(['launch.complete']);
    expect(verifyWebhook(launchReceiver.requests[0]!.body, launchReceiver.requests[0]!.headers, fixedSecret, { now: clock.now() }).event).toBe('launch.complete');

    const letters = await call('GET', '/dead-letters?kind=delivery', keys.admin);
    expect(letters.body.deadLetters).toHaveLength(2);
    for (const dl of letters.body.deadLetters as Json[]) expect((await call('POST', `/dead-letters/${dl.id}/retry`, keys.admin)).status).toBeLessThan(300);
    await drain();
    expect(events(launchReceiver)).toEqual(['launch.complete', 'launch.step_complete', 'launch.step_complete']);
    await commitEvents(tdb.db, clock, launchId, 1, 'launch.failed');
    await drain();
    expect(launchReceiver.requests).toHaveLength(4);

    expect((await call('PATCH', `/launches/${launchId}`, keys.globex, { webhookUrl: launchReceiver.url })).status).toBe(404);
    const bad = await call('PATCH', `/launches/${launchId}`, keys.acme, { webhookUrl: 'javascript:alert(1)', webhookSecret: 'short', name: 'x' });
    expect(bad.status).toBe(400);
    expect((bad.body.error.details.fields as Json[]).map((f) => f.field).sort()).toEqual(['name', 'webhookSecret', 'webhookUrl']);
  });

  it('deleting an endpoint removes its breaker, which is then neither listed nor holding anything back', async () => {
    const endpoint = await createEndpoint({ url: hooks[0]!.url });
    const key = endpointKey(hooks[0]!.url);
    const now = clock.now();
    await tdb.db.insertInto('endpoint_breakers').values({ endpoint: key, host: new URL(hooks[0]!.url).host, state: 'half-open', failures: 3, opened_at: now, updated_at: now }).execute();
    await service.breakers.load();
    expect((await call('GET', '/breakers', keys.admin)).body.breakers.map((b: Json) => b.endpoint)).toEqual([key]);
    expect((await call('DELETE', `/webhook-endpoints/${endpoint.id}`, keys.acme)).status).toBe(204);
    expect(await tdb.db.selectFrom('endpoint_breakers').select('endpoint').execute()).toEqual([]);
    clock.advance(1_001); // the registry's next read of the table
    expect((await call('GET', '/breakers', keys.admin)).body.breakers).toEqual([]);
    expect(service.breakers.snapshot()).toEqual({});
  });

  it('during a rotation every attempt verifies with the old secret alone and with the new alone; after the overlap only the new', async () => {
    await build({ schedule: [0, 30_000, 120_000] });
    const endpoint = await createEndpoint({ url: hooks[0]!.url });
    const oldSecret = endpoint.secret as string;
    const rotated = await call('POST', `/webhook-endpoints/${endpoint.id}/rotate-secret`, keys.acme, { expiresInSeconds: 3600 });
    expect(rotated.status).toBe(200);
    const newSecret = rotated.body.endpoint.secret as string;
    expect(newSecret).not.toBe(oldSecret);
    expect(rotated.body.endpoint.previousSecretExpiresAt).toBe(new Date(clock.now() + 3600_000).toISOString());

    let fail = 2;
    hooks[0]!.respond = () => (fail-- > 0 ? { status: 503 } : { status: 200 });
    const launchId = await insertLaunch(tdb.db, clock, { url: launchReceiver.url, secret: LAUNCH_SECRET, box });
    await commitEvents(tdb.db, clock, launchId, 1, 'launch.queued');
    await drain();
    clock.advance(30_000);
    await drain();
    clock.advance(120_000);
    await drain();
    expect(hooks[0]!.requests).toHaveLength(3);
    for (const q of hooks[0]!.requests) {
      expect(String(q.headers['x-service-signature']).split(' ')).toHaveLength(2);
      const now = q.at;
      expect(verifyWebhook(q.body, q.headers, oldSecret, { now }).attempt).toBeGreaterThan(0);
      expect(verifyWebhook(q.body, q.headers, newSecret, { now }).payload).toMatchObject({ launchId });
    }

    clock.advance(3600_000);
    await commitEvents(tdb.db, clock, launchId, 1, 'launch.processing');
    await drain();
    const after = hooks[0]!.requests[3]!;
    expect(String(after.headers['x-service-signature']).split(' ')).toHaveLength(1);
    expect(verifyWebhook(after.body, after.headers, newSecret, { now: clock.now() }).event).toBe('launch.processing');
    expect(() => verifyWebhook(after.body, after.headers, oldSecret, { now: clock.now() })).toThrow(/signature/);
    expect((await call('GET', `/webhook-endpoints/${endpoint.id}`, keys.acme)).body.endpoint.previousSecretExpiresAt).toBeNull();
  });

  it('signs a standard endpoint per Standard Webhooks, verified by an implementation written from the spec', async () => {
    const endpoint = await createEndpoint({ url: hooks[0]!.url, signatureScheme: 'standard' });
    const launchId = await insertLaunch(tdb.db, clock, { url: launchReceiver.url, secret: LAUNCH_SECRET, box });
    const [eventId] = await commitEvents(tdb.db, clock, launchId, 1, 'launch.queued');
    await drain();
    const q = hooks[0]!.requests[0]!;
    expect(q.headers['webhook-id']).toBe(eventId);
    expect(q.headers['webhook-timestamp']).toBe(String(Math.floor(clock.now() / 1000)));
    expect(String(q.headers['webhook-signature'])).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/);
    expect(q.headers['x-service-signature']).toBeUndefined();
    expect(standardWebhooksVerify(endpoint.secret as string, q.headers, q.body)).toBe(true);
    expect(standardWebhooksVerify(endpoint.secret as string, q.headers, q.body.replace('launch.queued', 'launch.failed'))).toBe(false);
    expect(standardWebhooksVerify('whsec_' + Buffer.alloc(24, 1).toString('base64'), q.headers, q.body)).toBe(false);
    // The launch's own URL keeps the service scheme.
    expect(launchReceiver.requests[0]!.headers['x-service-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
  });

  it('a 410 answer disables the endpoint, visibly, and later events are not sent to it', async () => {
    const endpoint = await createEndpoint({ url: hooks[0]!.url });
    hooks[0]!.respond = () => ({ status: 410, body: 'gone' });
    const launchId = await insertLaunch(tdb.db, clock, { url: launchReceiver.url, secret: LAUNCH_SECRET, box });
    await commitEvents(tdb.db, clock, launchId, 1, 'launch.queued');
    await drain();
    const shown = (await call('GET', `/webhook-endpoints/${endpoint.id}`, keys.acme)).body.endpoint;
    expect(shown).toMatchObject({ disabled: true, disabledReason: 'endpoint_answered_410', disabledAt: new Date(clock.now()).toISOString() });
    // Its unsent delivery is paused, not retried against a gone endpoint.
    const delivery = await tdb.db.selectFrom('deliveries').select(['status', 'last_status_code']).where('endpoint_id', '=', endpoint.id).executeTakeFirstOrThrow();
    expect(delivery).toEqual({ status: 'paused', last_status_code: 410 });
    clock.advance(60_000);
    await commitEvents(tdb.db, clock, launchId, 1, 'launch.processing');
    await drain();
    expect(hooks[0]!.requests).toHaveLength(1);
    expect(launchReceiver.requests).toHaveLength(2);

    // Enabling resumes the paused delivery at once.
    hooks[0]!.respond = () => ({ status: 200 });
    expect((await call('PATCH', `/webhook-endpoints/${endpoint.id}`, keys.acme, { disabled: false })).body.endpoint.disabled).toBe(false);
    await drain();
    expect(events(hooks[0]!)).toEqual(['launch.queued', 'launch.queued']);
  });

  it('disables an endpoint that has failed continuously for ENDPOINT_DISABLE_AFTER; a success resets the run', async () => {
    await build({ schedule: [0, ...Array.from({ length: 11 }, () => 600_000)], disableAfterMs: 3600_000 });
    const endpoint = await createEndpoint({ url: hooks[0]!.url });
    let ok = false;
    hooks[0]!.respond = () => ({ status: ok ? 200 : 500 });
    const launchId = await insertLaunch(tdb.db, clock, { url: launchReceiver.url, secret: LAUNCH_SECRET, box });
    await commitEvents(tdb.db, clock, launchId, 1, 'launch.queued');
    await drain();
    clock.advance(600_000);
    await drain(); // failing for 10 min
    ok = true;
    await commitEvents(tdb.db, clock, launchId, 1, 'launch.processing');
    await drain(); // a success ends the run
    ok = false;
    const show = async () => (await call('GET', `/webhook-endpoints/${endpoint.id}`, keys.acme)).body.endpoint as Json;
    expect(await show()).toMatchObject({ disabled: false, failingSince: null });
    for (let i = 0; i < 5; i++) {
      clock.advance(600_000);
      await drain();
    }
    expect(await show()).toMatchObject({ disabled: false }); // failing for 40 min since the success
    for (let i = 0; i < 3; i++) {
      clock.advance(600_000);
      await drain();
    }
    const shown = await show();
    expect(shown).toMatchObject({ disabled: true, disabledReason: 'failing_continuously' });
    expect(Date.parse(shown.disabledAt as string) - Date.parse(shown.failingSince as string)).toBeGreaterThanOrEqual(3600_000);
  });

  it('recover brings back exactly the failed deliveries since T; stats give the 24 h success rate and latency percentiles', async () => {
    await build({ schedule: [0] }); // one attempt: a failure is final at once
    const endpoint = await createEndpoint({ url: hooks[0]!.url });
    hooks[0]!.respond = () => ({ status: 500 });
    const launchId = await insertLaunch(tdb.db, clock, { url: launchReceiver.url, secret: LAUNCH_SECRET, box });
    await commitEvents(tdb.db, clock, launchId, 1, 'launch.queued'); // fails before T
    await drain();
    clock.advance(60_000);
    const since = new Date(clock.now()).toISOString();
    const afterT = await commitEvents(tdb.db, clock, launchId, 2, 'launch.step_complete'); // fail after T
    await drain();
    hooks[0]!.respond = () => ({ status: 200 });
    await commitEvents(tdb.db, clock, launchId, 1, 'launch.complete'); // delivered: nothing to recover
    await drain();
    expect(hooks[0]!.requests).toHaveLength(4);

    const recovered = await call('POST', `/webhook-endpoints/${endpoint.id}/recover`, keys.acme, { since });
    expect(recovered.status).toBe(202);
    expect(recovered.body.recovered.deliveries).toBe(2);
    await drain();
    const resent = hooks[0]!.requests.slice(4).map((q) => (JSON.parse(q.body) as Json).id as string);
    expect(resent.sort()).toEqual([...afterT].sort());
    // Recovering again finds nothing left to recover; their dead letters were marked retried.
    expect((await call('POST', `/webhook-endpoints/${endpoint.id}/recover`, keys.acme, { since })).body.recovered.deliveries).toBe(0);
    const letters = await tdb.db.selectFrom('dead_letters').select(['event_id', 'status']).execute();
    expect(letters.filter((l) => l.status === 'retried').map((l) => l.event_id).sort()).toEqual([...afterT].sort());
    expect((await call('POST', `/webhook-endpoints/${endpoint.id}/recover`, keys.acme, { since: 'yesterday' })).status).toBe(400);

    const stats = (await call('GET', `/webhook-endpoints/${endpoint.id}/stats`, keys.acmeRead)).body.stats as Json;
    expect(stats).toMatchObject({ attempts: 6, succeeded: 3, failed: 3, successRate: 0.5, deliveries: { delivered: 3, failed: 1, pending: 0 } }); // recovered: the same deliveries, delivered now
    expect(stats.latencyMs.p50).toBeGreaterThanOrEqual(0);
    expect(stats.latencyMs.p99).toBeGreaterThanOrEqual(stats.latencyMs.p50 as number);
    clock.advance(24 * 3600_000 + 1);
    expect((await call('GET', `/webhook-endpoints/${endpoint.id}/stats`, keys.acmeRead)).body.stats).toMatchObject({ attempts: 0, successRate: null, latencyMs: { p50: null, p99: null } });
  });

  it('Retry-After: 5 on a 429 from an endpoint delays its next attempt by at least 5 s', async () => {
    await build({ schedule: [0, 1000, 10_000] }); // Retry-After is capped at the schedule's end (11 s here)
    const endpoint = await createEndpoint({ url: hooks[0]!.url });
    let first = true;
    hooks[0]!.respond = () => (first ? ((first = false), { status: 429, headers: { 'retry-after': '5' } }) : { status: 200 });
    const launchId = await insertLaunch(tdb.db, clock, { url: launchReceiver.url, secret: LAUNCH_SECRET, box });
    await commitEvents(tdb.db, clock, launchId, 1, 'launch.queued');
    await drain();
    const startedAt = clock.now();
    clock.advance(1000); // the schedule alone would retry now
    await drain();
    clock.advance(3999);
    await drain();
    expect(hooks[0]!.requests).toHaveLength(1);
    clock.advance(1);
    await drain();
    expect(hooks[0]!.requests).toHaveLength(2);
    expect(hooks[0]!.requests[1]!.at - startedAt).toBeGreaterThanOrEqual(5000);
    const row = await tdb.db.selectFrom('deliveries').select(['status', 'attempt_count']).where('endpoint_id', '=', endpoint.id).executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'delivered', attempt_count: 2 });
  });

  it('chain watcher events fan out like launch events', async () => {
    const vesting = await createEndpoint({ url: hooks[0]!.url, events: ['vesting.*', 'fees.claimed'] });
    const launchId = await insertLaunch(tdb.db, clock, { url: launchReceiver.url, secret: LAUNCH_SECRET, box });
    for (const kind of ['vesting.cliff_reached', 'vesting.claimed', 'dao.vote_cast', 'fees.claimed']) await commitEvents(tdb.db, clock, launchId, 1, kind);
    await drain();
    // Committed in the same millisecond: delivered in any order.
    expect(events(hooks[0]!).sort()).toEqual(['fees.claimed', 'vesting.claimed', 'vesting.cliff_reached']);
    expect(events(launchReceiver)).toHaveLength(4);
    expect(hooks[0]!.requests.every((q) => verifyWebhook(q.body, q.headers, vesting.secret as string, { now: clock.now() }))).toBe(true);
  });

  it('GET /launches/{id}/events shows the event log with each exact body', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url: launchReceiver.url, secret: LAUNCH_SECRET, box });
    const ids = await commitEvents(tdb.db, clock, launchId, 3, 'launch.step_complete');
    await drain();
    const res = await call('GET', `/launches/${launchId}/events?limit=2`, keys.acmeRead);
    expect(res.status).toBe(200);
    expect(res.body.pagination).toMatchObject({ total: 3, returned: 2, has_more: true, next_offset: 2 });
    expect((res.body.events as Json[]).map((e) => [e.id, e.sequence])).toEqual([
      [ids[0], 1],
      [ids[1], 2],
    ]);
    expect(res.body.events[0].payload).toEqual(JSON.parse(launchReceiver.requests[0]!.body));
    expect((await call('GET', `/launches/${launchId}/events`, keys.globex)).status).toBe(404);
  });
});

describe('webhook endpoint and launch destination URLs in production', () => {
  it('refuse plain http, credentials, literal non-public addresses and local names, like a launch webhookUrl', () => {
    for (const url of ['http://hooks.example.com/x', 'https://user:pw@hooks.example.com/x', 'https://127.0.0.1/x', 'https://[::ffff:7f00:1]/x', 'https://10.1.2.3/x', 'https://169.254.169.254/latest', 'https://localhost/x', 'https://db.internal/x', 'https://intranet/x']) {
      expect(webhookUrlProblem(url, true), url).toBeDefined();
      expect(() => parseEndpointCreate({ url }, { requireHttps: true }), url).toThrow(/invalid/);
      expect(() => parseDestinationPatch({ webhookUrl: url }, { requireHttps: true }), url).toThrow(/invalid/);
    }
    expect(webhookUrlProblem('https://hooks.example.com/x', true)).toBeUndefined();
    expect(webhookUrlProblem('http://127.0.0.1:9/x', false)).toBeUndefined();
  });
});
