import { PublicKey } from '@solana/web3.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import type { BreakerRegistry } from '../../src/webhooks/breakerRegistry.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';
import { captureLogger, commitEvents, createTestDb, insertLaunch, newSecretBox, startReceiver, engineConfig, type Receiver, type TestDb } from '../support/webhooks.js';

type Json = Record<string, any>;

// Production as deployed: https only, outbound guard on, no development key.
const PRODUCTION = { NODE_ENV: 'production', CHAIN: 'embedded', RATE_LIMIT_PER_MINUTE: '1000000' };

let t: TestService;
let key: string;
let admin: string;

beforeAll(async () => {
  t = await startTestService({ env: PRODUCTION });
  key = await t.key('acme', ['launches:write', 'launches:read']);
  admin = await t.key('ops', ['admin']);
  // Production airdrops nothing: the owner funds its wallet (docs/funding.md).
  const { funding } = (await (await t.request('/api/funding', { key })).json()) as { funding: { address: string } };
  await t.service.chain.requestAirdrop!(new PublicKey(funding.address), 10_000_000_000n);
});
afterAll(async () => {
  await t?.close();
});

const launches = async () => Number((await t.service.db.selectFrom('launches').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

async function createWith(webhookUrl: string): Promise<{ status: number; body: Json }> {
  const res = await t.request('/api/launches', { method: 'POST', key, json: launchBody({ webhookUrl }) });
  return { status: res.status, body: (await res.json()) as Json };
}

describe('webhook destinations refused at creation in production', () => {
  it('refuses literal non-public addresses in every form the URL parser accepts, and local names, with 400 and nothing created', async () => {
    const before = await launches();
    for (const url of [
      'https://127.1/',
      'https://0x7f.0.0.1/hook',
      'https://2130706433/',
      'https://[::ffff:7f00:1]/',
      'https://[::1]/',
      'https://10.0.0.5/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://100.64.0.1/',
      'https://[fd00::1]/',
      'https://localhost/',
      'https://LOCALHOST./',
      'https://api.localhost/',
      'https://printer.local/',
      'https://db.internal/',
      'https://intranet/',
    ]) {
      const res = await createWith(url);
      expect(res.status, url).toBe(400);
      expect(res.body.error.details.fields, url).toEqual([expect.objectContaining({ field: 'webhookUrl' })]);
    }
    expect(await launches()).toBe(before);
  });

  it('refuses the special IPv6 ranges a hand-written list missed', async () => {
    for (const address of ['2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '::ffff:0:7f00:1', '2001:10::1', '2001:20::1', '3fff::1', '5f00::1', '2001:db8::1', '64:ff9b::a00:1', '2002:7f00:1::1', '100::1', '::7f00:1']) {
      const res = await createWith(`https://[${address}]/hook`);
      expect(res.status, address).toBe(400);
      expect(res.body.error.details.fields[0].message, address).toMatch(/non-public|not global unicast/);
    }
  });

  it('accepts a public host name and a public address', async () => {
    expect((await createWith('https://hooks.example.com/launch')).status).toBe(202);
    expect((await createWith('https://[2606:4700:4700::1111]/launch')).status).toBe(202);
    expect((await createWith('https://8.8.8.8/launch')).status).toBe(202);
  });
});

describe('generic destination errors in production', () => {
  it('the test route says only "destination not allowed", never the address or what the name resolved to', async () => {
    for (const url of ['https://127.0.0.1:9/hook', 'https://localhost:9/hook']) {
      const res = await t.request('/api/webhooks/test', { method: 'POST', key, json: { webhookUrl: url, event: 'launch.queued' } });
      const body = (await res.json()) as Json;
      expect(res.status).toBe(200);
      expect(body.result.delivered).toBe(false);
      expect(body.result.error).toEqual({ class: 'blocked_destination', message: 'destination not allowed' });
      // (The breaker field names the caller's own URL host; nothing else may say where it led.)
      const { breaker: _breaker, ...rest } = body.result as Json;
      expect(JSON.stringify(rest)).not.toMatch(/127\.0\.0\.1|loopback|resolved/);
    }
  });

  describe('delivery attempts', () => {
    let tdb: TestDb;
    let receiver: Receiver;
    afterEach(async () => {
      await receiver?.close();
      await tdb?.close();
    });

    it('store "destination not allowed" in the attempt and the delivery; the server log keeps the detail', async () => {
      tdb = await createTestDb();
      const clock = manualClock();
      receiver = await startReceiver(clock);
      const box = newSecretBox();
      const { logger, lines } = captureLogger();
      // A public-looking name that resolves inside the network: passes creation, refused at connect.
      const engine = createWebhookEngine({
        db: tdb.db,
        clock,
        logger,
        config: engineConfig({ production: true, webhooks: { allowPrivateNetworks: false } }),
        secretBox: box,
        lookup: async () => [{ address: '10.20.30.40', family: 4 }],
      });
      try {
        const launchId = await insertLaunch(tdb.db, clock, { url: 'https://db.customer.example/hook', secret: 'whsec_0123456789abcdef', box });
        await commitEvents(tdb.db, clock, launchId, 1);
        await engine.dispatcher.runOnce();
        const attempt = await tdb.db.selectFrom('delivery_attempts').selectAll().executeTakeFirstOrThrow();
        const delivery = await tdb.db.selectFrom('deliveries').selectAll().executeTakeFirstOrThrow();
        expect(attempt).toMatchObject({ error_class: 'blocked_destination', error_message: 'destination not allowed' });
        expect(delivery.last_error).toBe('destination not allowed');
        expect(lines.join('')).toContain('10.20.30.40');
        expect(lines.join('')).toContain('resolved from db.customer.example');
      } finally {
        await engine.stop();
      }
    });
  });
});

describe('health in production', () => {
  it('shows anonymous callers opaque stable labels instead of customers\u2019 webhook hosts, and admins the host names', async () => {
    const now = Date.now();
    for (const endpoint of ['https://hooks.acme-customer.example:443/a', 'https://hooks.acme-customer.example:443/b', 'https://relay.globex.example:8443/x']) {
      await t.service.db.insertInto('endpoint_breakers').values({ endpoint, host: new URL(endpoint).host, state: 'open', failures: 3, opened_at: now, updated_at: now }).execute();
    }
    await (t.service.breakers as BreakerRegistry).load();
    const anonymous = await t.request('/api/health');
    const anonymousText = await anonymous.text();
    expect(anonymousText).not.toMatch(/acme-customer|globex/);
    const anon = JSON.parse(anonymousText) as Json;
    const labels = Object.keys(anon.circuitBreakers);
    expect(labels).toHaveLength(2);
    for (const label of labels) expect(label).toMatch(/^host-[0-9a-f]{12}$/);
    // Monitors still count open breakers.
    expect(Object.values(anon.circuitBreakers).filter((b: any) => b.state === 'open')).toHaveLength(2);
    // Stable: the same label on the next report.
    await new Promise((r) => setTimeout(r, t.config.healthCacheMs + 10));
    expect(Object.keys(((await (await t.request('/api/health')).json()) as Json).circuitBreakers).sort()).toEqual([...labels].sort());

    const owner = (await (await t.request('/api/health', { key })).json()) as Json;
    expect(Object.keys(owner.circuitBreakers).sort()).toEqual([...labels].sort());
    const adminView = (await (await t.request('/api/health', { key: admin })).json()) as Json;
    expect(Object.keys(adminView.circuitBreakers).sort()).toEqual(['hooks.acme-customer.example', 'relay.globex.example:8443']);
  });
});

describe('/metrics in production', () => {
  it('answers 404 without METRICS_TOKEN, so nothing is exposed by default', async () => {
    const res = await t.request('/metrics');
    expect(res.status).toBe(404);
    expect(await res.text()).not.toContain('launch_service_');
    expect((await t.request('/metrics', { headers: { authorization: 'Bearer anything' } })).status).toBe(404);
  });

  it('answers /metrics/, any other method and a trailing slash on any route with the 404 of an unknown path, never a 405 that reveals the route', async () => {
    const unknown = (await (await t.request('/no-such-path')).json()) as Json;
    for (const [method, path] of [
      ['GET', '/metrics/'],
      ['HEAD', '/metrics/'],
      ['POST', '/metrics'],
      ['DELETE', '/metrics/'],
      ['GET', '/api/launches/'],
      ['POST', '/api/launches/'],
      ['GET', '/api/health/'],
    ] as const) {
      const res = await t.request(path, { method, key });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.headers.get('allow'), `${method} ${path}`).toBeNull();
      if (method === 'HEAD') continue;
      const body = (await res.json()) as Json;
      expect(body.error.code).toBe('not_found');
      expect(body.error.message).toBe(`No route for ${method} ${path}`);
      expect(Object.keys(body.error).sort()).toEqual(Object.keys(unknown.error).sort());
    }
    // A wrong method on a route that exists, written exactly, is still a 405.
    expect((await t.request('/api/launches', { method: 'PUT', key })).status).toBe(405);
  });

  it('with METRICS_TOKEN requires it and labels breaker hosts with the same opaque labels as health', async () => {
    const withToken = await startTestService({ env: { ...PRODUCTION, METRICS_TOKEN: 'prod-metrics-token' } });
    try {
      const now = Date.now();
      const endpoint = 'https://hooks.secret-customer.example/hook';
      await withToken.service.db.insertInto('endpoint_breakers').values({ endpoint, host: new URL(endpoint).host, state: 'open', failures: 3, opened_at: now, updated_at: now }).execute();
      await (withToken.service.breakers as BreakerRegistry).load();
      expect((await withToken.request('/metrics')).status).toBe(401);
      const text = await (await withToken.request('/metrics', { headers: { authorization: 'Bearer prod-metrics-token' } })).text();
      expect(text).not.toContain('secret-customer');
      const label = Object.keys(((await (await withToken.request('/api/health')).json()) as Json).circuitBreakers)[0];
      expect(label).toMatch(/^host-[0-9a-f]{12}$/);
      expect(text).toContain(`launch_service_breaker_not_closed{host="${label}",state="open"} 1`);
    } finally {
      await withToken.close();
    }
  });
});
