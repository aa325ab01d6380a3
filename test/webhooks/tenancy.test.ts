import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { webhookRoutes } from '../../src/app/routes.js';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { createApp } from '../../src/http/app.js';
import { RateLimiter } from '../../src/http/middleware/rateLimit.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { breakerVerdict } from '../../src/webhooks/breakerVerdict.js';
import { delayHonouringRetryAfter, parseRetryAfter } from '../../src/webhooks/retryAfter.js';
import { createWebhookService, type WebhookService } from '../../src/webhooks/service.js';
import { commitEvents, createTestDb, insertLaunch, newSecretBox, startReceiver, engineConfig, type Receiver, type TestDb } from '../support/webhooks.js';

type Json = Record<string, any>;
const MIN = 60_000;
const SCHEDULE = [0, 30_000, 120_000, 600_000, 3_600_000];

let tdb: TestDb;
let receiver: Receiver;
let service: WebhookService;
let app: ReturnType<typeof createApp>;
let keys: { admin: string; acme: string };
const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
const box = newSecretBox();

beforeEach(async () => {
  tdb = await createTestDb();
  receiver = await startReceiver(clock, '/');
  service = createWebhookService({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig({ webhooks: { retrySchedule: SCHEDULE, maxInFlight: 32, maxInFlightPerHost: 32 } }), secretBox: box });
  const routes = webhookRoutes({ db: tdb.db, clock, engine: service.engine, testSecret: 'whsec_test', requeueLaunch: async () => undefined, wakeRunner: () => undefined });
  app = createApp({ db: tdb.db, logger: silentLogger(), limiter: new RateLimiter(100_000, clock), bodyLimitBytes: 65_536, routes });
  keys = {
    admin: (await createApiKey(tdb.db, { owner: 'ops', scopes: ['admin'], now: clock.now() })).key,
    acme: (await createApiKey(tdb.db, { owner: 'acme', scopes: ['launches:read', 'launches:write'], now: clock.now() })).key,
  };
});
afterEach(async () => {
  await service.stop();
  await receiver.close();
  await tdb.close();
});

const origin = () => new URL(receiver.url).origin;
const host = () => new URL(receiver.url).host;
const runOnce = () => service.engine.dispatcher.runOnce();
const delivered = (path: string) => receiver.requests.filter((r) => r.url === path).length;
const call = async (method: string, path: string, key?: string) => {
  const res = await app.request(path, { method, headers: key ? { authorization: `Bearer ${key}` } : {} });
  return { status: res.status, body: (await res.json()) as Json };
};
const deliveriesOf = (launchId: string) => tdb.db.selectFrom('deliveries').selectAll().where('launch_id', '=', launchId).orderBy('created_at').execute();

describe('breakers per endpoint: one customer never stalls another on a shared host', () => {
  it("delivers owner B's events at once while owner A's path on the same host is open, and health aggregates the host", async () => {
    receiver.respond = (req) => (req.url === '/owner-a' ? { status: 500 } : { status: 200 });
    const a = await insertLaunch(tdb.db, clock, { url: `${origin()}/owner-a`, secret: 'whsec_a_0123456789ab', box, owner: 'acme' });
    const b = await insertLaunch(tdb.db, clock, { url: `${origin()}/owner-b`, secret: 'whsec_b_0123456789ab', box, owner: 'globex' });
    await commitEvents(tdb.db, clock, a, 3);
    await runOnce();
    expect(service.breakers.snapshot()).toEqual({ [host()]: { state: 'open', failures: 3 } });

    // B's events arrive while A's endpoint is open: they go out now, not after A's reset window.
    clock.advance(1_000);
    await commitEvents(tdb.db, clock, b, 5);
    await commitEvents(tdb.db, clock, a, 2);
    await runOnce();
    expect(delivered('/owner-b')).toBe(5);
    expect((await deliveriesOf(b)).map((d) => d.status)).toEqual(Array(5).fill('delivered'));
    // A's new events wait without spending attempts.
    expect(delivered('/owner-a')).toBe(3);
    expect((await deliveriesOf(a)).slice(3).map((d) => d.attempt_count)).toEqual([0, 0]);

    // Operators see the one open endpoint; B's endpoint never failed, so it has nothing to show.
    const list = await call('GET', '/api/breakers', keys.admin);
    expect(list.body.breakers.map((x: Json) => [x.endpoint, x.state])).toEqual([[`http://127.0.0.1:${new URL(receiver.url).port}/owner-a`, 'open']]);
  });

  it('takes half-open trials in turns among the endpoint\u2019s waiting deliveries, so one delivery that keeps failing does not hold the rest', async () => {
    let poison = '';
    let healthy = false;
    receiver.respond = (req) => (JSON.parse(req.body).id === poison || !healthy ? { status: 500 } : { status: 200 });
    const launch = await insertLaunch(tdb.db, clock, { url: `${origin()}/shared`, secret: 'whsec_0123456789abcd', box });
    poison = (await commitEvents(tdb.db, clock, launch, 1))[0]!;
    await runOnce();
    clock.advance(1_000);
    await commitEvents(tdb.db, clock, launch, 2);
    await runOnce();
    expect(service.breakers.stateOf(host()).state).toBe('open');
    healthy = true; // the receiver recovered, except for the one event it always refuses

    clock.advance(5 * MIN);
    await runOnce(); // trial 1: the least recently touched delivery is the poison one
    expect(JSON.parse(receiver.requests.at(-1)!.body).id).toBe(poison);
    expect(service.breakers.stateOf(host()).state).toBe('open');
    clock.advance(5 * MIN);
    await runOnce(); // trial 2: another delivery's turn; it succeeds and closes the breaker
    expect(JSON.parse(receiver.requests.at(-1)!.body).id).not.toBe(poison);
    expect(service.breakers.stateOf(host()).state).toBe('closed');
  });
});

describe('what counts against a breaker', () => {
  it('a 4xx costs the delivery its attempt but never opens the breaker; 5xx and 429 do', async () => {
    receiver.respond = (req) => ({ status: req.url === '/bad-request' ? 400 : req.url === '/gone' ? 404 : req.url === '/limited' ? 429 : 503 });
    const launches = {} as Record<string, string>;
    for (const path of ['/bad-request', '/gone', '/limited', '/unavailable']) {
      launches[path] = await insertLaunch(tdb.db, clock, { url: `${origin()}${path}`, secret: 'whsec_0123456789abcd', box });
      await commitEvents(tdb.db, clock, launches[path]!, 3);
    }
    await runOnce();
    // A later created_at for the fourth event: PostgreSQL returns rows of one created_at in no set order.
    clock.advance(1_000);
    for (const path of Object.keys(launches)) await commitEvents(tdb.db, clock, launches[path]!, 1);
    await runOnce();
    const states = Object.fromEntries((await call('GET', '/api/breakers', keys.admin)).body.breakers.map((x: Json) => [new URL(x.endpoint).pathname, [x.state, x.failures]]));
    // 4xx endpoints never got a failure on their breaker (nothing to list); 429 and 503 opened theirs.
    expect(states).toEqual({ '/limited': ['open', 3], '/unavailable': ['open', 3] });
    expect(service.breakers.snapshot()).toEqual({ [host()]: { state: 'open', failures: 3 } });
    // Every 4xx delivery was attempted (its attempt spent and logged), none of them paused.
    for (const path of ['/bad-request', '/gone']) {
      const rows = await deliveriesOf(launches[path]!);
      expect(rows.map((d) => [d.attempt_count, d.last_status_code])).toEqual(Array(4).fill([1, path === '/gone' ? 404 : 400]));
    }
    // Past the threshold, a failing endpoint's next delivery waited without spending an attempt.
    for (const path of ['/limited', '/unavailable']) expect((await deliveriesOf(launches[path]!)).map((d) => d.attempt_count)).toEqual([1, 1, 1, 0]);
  });

  it('classifies outcomes: host-level failures count, other answers show the host is up, refusals before the host say nothing', () => {
    const base = { ok: false, statusCode: null, durationMs: 1, responseBody: null, errorMessage: 'x' };
    expect(breakerVerdict({ ...base, errorClass: 'timeout' })).toBe('failure');
    for (const errorClass of ['connection_refused', 'dns_error', 'tls_error', 'connection_error']) expect(breakerVerdict({ ...base, errorClass })).toBe('failure');
    for (const status of [500, 502, 503, 504, 429]) expect(breakerVerdict({ ...base, statusCode: status, errorClass: 'http_status' })).toBe('failure');
    for (const status of [400, 401, 403, 404, 410, 422, 302]) expect(breakerVerdict({ ...base, statusCode: status, errorClass: status === 302 ? 'redirect' : 'http_status' })).toBe('success');
    for (const errorClass of ['blocked_destination', 'insecure_scheme', 'invalid_url', 'secret_unavailable']) expect(breakerVerdict({ ...base, errorClass })).toBe('neutral');
    expect(breakerVerdict({ ...base, errorClass: 'service_lagging', serviceFault: true })).toBe('neutral');
  });
});

describe('Retry-After on 429 and 503', () => {
  it('delays that delivery\u2019s next attempt as asked, never past the schedule\u2019s end, and ignores it on other statuses', async () => {
    const answers: Record<string, { status: number; headers?: Record<string, string> }> = {
      '/wait-2m': { status: 429, headers: { 'retry-after': '120' } },
      '/wait-day': { status: 503, headers: { 'retry-after': '86400' } },
      '/wait-short': { status: 429, headers: { 'retry-after': '5' } },
      // HTTP dates are the receiver's wall clock, so the test writes one from the real clock.
      '/wait-date': { status: 503, headers: { 'retry-after': new Date(Date.now() + 300_000).toUTCString() } },
      '/500-with-header': { status: 500, headers: { 'retry-after': '600' } },
    };
    receiver.respond = (req) => answers[req.url] ?? { status: 200 };
    const ids: Record<string, string> = {};
    for (const path of Object.keys(answers)) {
      ids[path] = await insertLaunch(tdb.db, clock, { url: `${origin()}${path}`, secret: 'whsec_0123456789abcd', box });
      await commitEvents(tdb.db, clock, ids[path]!, 1);
    }
    const now = clock.now();
    await runOnce();
    const next = async (path: string) => (await deliveriesOf(ids[path]!))[0]!.next_attempt_at - now;
    expect(await next('/wait-2m')).toBe(120_000);
    // A day is more than the schedule has left (30 s + 2 m + 10 m + 1 h): capped at its end.
    expect(await next('/wait-day')).toBe(30_000 + 120_000 + 600_000 + 3_600_000);
    expect(await next('/wait-short')).toBe(30_000); // shorter than the schedule: the schedule wins
    // The HTTP-date form is read against the wall clock the receiver used; allow the test's run time.
    expect(Math.abs((await next('/wait-date')) - 300_000)).toBeLessThan(120_000);
    expect(await next('/500-with-header')).toBe(30_000);

    // Not attempted before the time asked for.
    clock.advance(119_999);
    await runOnce();
    expect(receiver.requests.filter((r) => r.url === '/wait-2m')).toHaveLength(1);
    clock.advance(1);
    await runOnce();
    expect(receiver.requests.filter((r) => r.url === '/wait-2m')).toHaveLength(2);
  });

  it('parses delta-seconds and HTTP dates, and computes the cap from the remaining schedule', () => {
    const now = Date.UTC(2026, 5, 1, 12);
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(new Date(now + 90_000).toUTCString(), now)).toBe(90_000);
    for (const bad of [undefined, '', '-5', '1.5', 'soon', '0', new Date(now - 1000).toUTCString()]) expect(parseRetryAfter(bad, now)).toBeUndefined();
    expect(delayHonouringRetryAfter(SCHEDULE, 1, 30_000, 120_000)).toBe(120_000);
    expect(delayHonouringRetryAfter(SCHEDULE, 3, 600_000, 86_400_000)).toBe(600_000 + 3_600_000);
    expect(delayHonouringRetryAfter(SCHEDULE, 1, 30_000, undefined)).toBe(30_000);
  });
});

describe('operators: GET /api/breakers and POST /api/breakers/{key}/reset', () => {
  it('lists every endpoint breaker for admins, resets one by id so its paused deliveries go out at once, and refuses others', async () => {
    receiver.respond = () => ({ status: 502 });
    const launch = await insertLaunch(tdb.db, clock, { url: `${origin()}/ops`, secret: 'whsec_0123456789abcd', box });
    await commitEvents(tdb.db, clock, launch, 3);
    await runOnce();
    const openedAt = clock.now();
    await commitEvents(tdb.db, clock, launch, 2);
    await runOnce();

    expect((await call('GET', '/api/breakers', keys.acme)).status).toBe(403);
    expect((await call('GET', '/api/breakers')).status).toBe(401);
    const list = await call('GET', '/api/breakers', keys.admin);
    expect(list.status).toBe(200);
    const [breaker] = list.body.breakers as Json[];
    expect(breaker).toMatchObject({
      host: host(),
      state: 'open',
      failures: 3,
      openedAt: new Date(openedAt).toISOString(),
      nextTrialAt: new Date(openedAt + 5 * MIN).toISOString(),
      pendingDeliveries: 5,
    });
    expect(breaker!.id).toMatch(/^brk_[0-9a-f]{16}$/);

    receiver.respond = () => ({ status: 200 });
    expect((await call('POST', `/api/breakers/${breaker!.id}/reset`, keys.acme)).status).toBe(403);
    expect((await call('POST', '/api/breakers/brk_0000000000000000/reset', keys.admin)).status).toBe(404);
    const reset = await call('POST', `/api/breakers/${breaker!.id}/reset`, keys.admin);
    expect(reset.status).toBe(200);
    expect(reset.body.breakers).toEqual([expect.objectContaining({ state: 'closed', failures: 0, nextTrialAt: null })]);
    expect((await tdb.db.selectFrom('endpoint_breakers').select(['state', 'failures']).execute())).toEqual([{ state: 'closed', failures: 0 }]);

    // No clock movement: the two deliveries that never went out go now; the three that failed wait for their retry.
    await runOnce();
    expect((await deliveriesOf(launch)).filter((d) => d.status === 'delivered')).toHaveLength(2);
    clock.advance(30_000);
    await service.engine.dispatcher.drain();
    expect((await deliveriesOf(launch)).every((d) => d.status === 'delivered')).toBe(true);
  });

  it('resets by URL-encoded endpoint and by host name (every endpoint of the host)', async () => {
    receiver.respond = () => ({ status: 500 });
    for (const path of ['/x', '/y']) await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: `${origin()}${path}`, secret: 'whsec_0123456789abcd', box }), 3);
    await runOnce();
    const endpoints = ((await call('GET', '/api/breakers', keys.admin)).body.breakers as Json[]).map((b) => b.endpoint as string);
    expect(endpoints).toHaveLength(2);
    const one = await call('POST', `/api/breakers/${encodeURIComponent(endpoints[0]!)}/reset`, keys.admin);
    expect(one.body.breakers.map((b: Json) => b.endpoint)).toEqual([endpoints[0]]);
    expect(service.breakers.stateOf(host())).toEqual({ state: 'open', failures: 3 });
    const all = await call('POST', `/api/breakers/${encodeURIComponent(host())}/reset`, keys.admin);
    expect(all.body.breakers).toHaveLength(2);
    expect(service.breakers.stateOf(host())).toEqual({ state: 'closed', failures: 0 });
  });
});

describe('migration 007', () => {
  it('backfills each existing delivery\u2019s endpoint from its URL and replaces host-keyed breakers', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { Migrator, sql } = await import('kysely');
    const { migrationProvider } = await import('../../src/db/migrations/index.js');
    const { migrateToLatest, openDatabase } = await import('../../src/db/database.js');
    const dir = mkdtempSync(join(tmpdir(), 'm007-'));
    const opened = openDatabase(join(dir, 'db.sqlite'));
    try {
      const db = opened.db as any;
      expect((await new Migrator({ db, provider: migrationProvider }).migrateTo('004_delivery_claim_indexes')).error).toBeUndefined();
      await sql`pragma foreign_keys = off`.execute(db); // deliveries alone, without their launch and event
      const row = { event_id: 'evt_1', launch_id: 'lch_1', host: 'relay.example.com', status: 'pending', attempt_count: 0, next_attempt_at: 0, created_at: 0, updated_at: 0 };
      await db.insertInto('deliveries').values([
        { ...row, id: 'dlv_1', url: 'https://relay.example.com/hooks/a?x=1' },
        { ...row, id: 'dlv_2', url: 'https://relay.example.com:8443/hooks/b' },
      ]).execute();
      await db.insertInto('breaker_states').values({ host: 'relay.example.com', state: 'open', failures: 3, opened_at: 0, updated_at: 0 }).execute();
      await migrateToLatest(opened.db);
      expect(await opened.db.selectFrom('deliveries').select(['id', 'endpoint']).orderBy('id').execute()).toEqual([
        { id: 'dlv_1', endpoint: 'https://relay.example.com:443/hooks/a' },
        { id: 'dlv_2', endpoint: 'https://relay.example.com:8443/hooks/b' },
      ]);
      expect(await opened.db.selectFrom('endpoint_breakers').selectAll().execute()).toEqual([]);
    } finally {
      await opened.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
