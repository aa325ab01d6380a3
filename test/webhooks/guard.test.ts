import { Agent, request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { forbiddenAddressReason } from '../../src/webhooks/addressPolicy.js';
import { createWebhookEngine, outboundGuardEnabled } from '../../src/webhooks/engine.js';
import { createGuardedConnector, type HostLookup } from '../../src/webhooks/guardedConnector.js';
import { createWebhookHttpClient, type WebhookHttpClient } from '../../src/webhooks/httpClient.js';
import { commitEvents, createTestDb, insertLaunch, newSecretBox, startReceiver, engineConfig, type Receiver } from '../support/webhooks.js';

const FORBIDDEN: Array<[string, string]> = [
  ['127.0.0.1', 'loopback'],
  ['127.255.0.9', 'loopback'],
  ['10.0.0.1', 'RFC 1918'],
  ['172.16.5.4', 'RFC 1918'],
  ['172.31.255.255', 'RFC 1918'],
  ['192.168.0.10', 'RFC 1918'],
  ['169.254.169.254', 'link-local (cloud metadata)'],
  ['169.254.1.1', 'link-local'],
  ['100.64.0.1', 'CGNAT'],
  ['100.127.255.254', 'CGNAT'],
  ['0.0.0.0', 'unspecified'],
  ['224.0.0.251', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'broadcast'],
  ['192.0.2.1', 'documentation'],
  ['::', 'unspecified v6'],
  ['::1', 'loopback v6'],
  ['fc00::1', 'unique local'],
  ['fd00:ec2::254', 'unique local (cloud metadata v6)'],
  ['fe80::1', 'link-local v6'],
  ['febf::1', 'link-local v6'],
  ['ff02::1', 'multicast v6'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
  ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
  ['::ffff:8.8.8.8', 'IPv4-mapped public (refused outright)'],
  ['64:ff9b::a00:1', 'NAT64 of 10.0.0.1'],
  // Special-purpose ranges the earlier hand-written list missed.
  ['2001::1', 'Teredo 2001::/32'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
  ['::ffff:0:7f00:1', 'IPv4-translated ::ffff:0:0:0/96'],
  ['2001:10::1', 'ORCHID 2001:10::/28'],
  ['2001:20::1', 'ORCHIDv2 2001:20::/28'],
  ['2001:2::1', 'benchmarking 2001:2::/48'],
  ['3fff::1', 'documentation 3fff::/20'],
  ['5f00::1', 'segment routing 5f00::/16'],
  ['::7f00:1', 'IPv4-compatible ::/96'],
  ['4000::1', 'outside 2000::/3'],
  ['127.1', 'loopback, short form'],
  ['0x7f.1', 'loopback, hex form'],
];

describe('outbound address policy', () => {
  it.each(FORBIDDEN)('refuses %s (%s)', (address) => {
    expect(forbiddenAddressReason(address)).toBeTypeOf('string');
  });

  it.each(['8.8.8.8', '1.1.1.1', '100.63.255.255', '100.128.0.1', '172.32.0.1', '2606:4700:4700::1111', '2a00:1450:4001::200e'])('allows the public address %s', (address) => {
    expect(forbiddenAddressReason(address)).toBeUndefined();
  });

  it('is on in production and whenever private networks are not allowed', () => {
    expect(outboundGuardEnabled(engineConfig({ production: true }))).toBe(true);
    expect(outboundGuardEnabled(engineConfig({ webhooks: { allowPrivateNetworks: false } }))).toBe(true);
    expect(outboundGuardEnabled(engineConfig())).toBe(false);
  });
});

describe('guarded HTTP client (allowPrivateNetworks = false)', () => {
  let client: WebhookHttpClient;
  let receiver: Receiver;
  const lookups: string[] = [];
  const dns: Record<string, string[]> = {
    'metadata.evil.test': ['169.254.169.254'],
    'intranet.evil.test': ['10.1.2.3'],
    'v6loop.evil.test': ['::1'],
    'mixed.evil.test': ['93.184.216.34', '192.168.1.1'],
  };
  const lookup: HostLookup = async (hostname) => {
    lookups.push(hostname);
    return (dns[hostname] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  const send = (url: string) => client.send({ url, body: '{}', headers: { 'content-type': 'application/json' } });

  beforeEach(async () => {
    receiver = await startReceiver(manualClock());
    client = createWebhookHttpClient({ timeoutMs: 2_000, guard: true, lookup });
  });
  afterEach(async () => {
    await client.close();
    await receiver.close();
  });

  it.each(['127.0.0.1', '10.0.0.8', '169.254.169.254', '100.64.1.1', '0.0.0.0', '224.0.0.1', '[::1]', '[fc00::5]', '[fe80::1]', '[::ffff:127.0.0.1]', '[::]'])(
    'refuses https://%s at connect time',
    async (host) => {
      const outcome = await send(`https://${host}:${new URL(receiver.url).port}/hook`);
      expect(outcome).toMatchObject({ ok: false, statusCode: null, errorClass: 'blocked_destination' });
      expect(receiver.requests).toHaveLength(0);
    },
  );

  it.each(Object.keys(dns))('refuses the host name %s, which resolves to a forbidden address', async (name) => {
    const outcome = await send(`https://${name}/hook`);
    expect(outcome.errorClass).toBe('blocked_destination');
    expect(outcome.errorMessage).toContain(`resolved from ${name}`);
    expect(lookups).toContain(name);
  });

  it('refuses plain http before resolving or connecting', async () => {
    const outcome = await send(receiver.url);
    expect(outcome).toMatchObject({ ok: false, errorClass: 'insecure_scheme' });
    expect(receiver.requests).toHaveLength(0);
  });

  it('in production mode the engine refuses a 127.0.0.1 receiver, over http and over https', async () => {
    const tdb = await createTestDb();
    const clock = manualClock();
    const box = newSecretBox();
    const engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig({ production: true, webhooks: { allowPrivateNetworks: false } }), secretBox: box });
    try {
      const httpLaunch = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 's', box });
      const httpsLaunch = await insertLaunch(tdb.db, clock, { url: receiver.url.replace('http:', 'https:'), secret: 's', box });
      await commitEvents(tdb.db, clock, httpLaunch, 1);
      await commitEvents(tdb.db, clock, httpsLaunch, 1);
      await engine.dispatcher.runOnce();
      const attempts = await tdb.db.selectFrom('delivery_attempts').innerJoin('deliveries', 'deliveries.id', 'delivery_attempts.delivery_id').select(['launch_id', 'error_class']).execute();
      expect(attempts.find((a) => a.launch_id === httpLaunch)?.error_class).toBe('insecure_scheme');
      expect(attempts.find((a) => a.launch_id === httpsLaunch)?.error_class).toBe('blocked_destination');
      expect(receiver.requests).toHaveLength(0);
    } finally {
      await engine.stop();
      await tdb.close();
    }
  });
});

describe('HTTP client behaviour shared by every mode', () => {
  let client: WebhookHttpClient;
  let receiver: Receiver;
  let target: Receiver;
  beforeEach(async () => {
    receiver = await startReceiver(manualClock());
    target = await startReceiver(manualClock());
    client = createWebhookHttpClient({ timeoutMs: 300, guard: false });
  });
  afterEach(async () => {
    await client.close();
    await receiver.close();
    await target.close();
  });
  const send = () => client.send({ url: receiver.url, body: '{}', headers: { 'content-type': 'application/json' } });

  it('treats a redirect as a failure and never follows it', async () => {
    receiver.respond = () => ({ status: 301, headers: { location: target.url } });
    expect(await send()).toMatchObject({ ok: false, statusCode: 301, errorClass: 'redirect' });
    receiver.respond = () => ({ status: 307, headers: { location: target.url } });
    expect(await send()).toMatchObject({ ok: false, statusCode: 307, errorClass: 'redirect' });
    expect(target.requests).toHaveLength(0);
  });

  it('reads at most 64 KB of a huge answer and keeps 2 KB of it', async () => {
    receiver.respond = () => ({ status: 200, body: 'y'.repeat(3 * 1024 * 1024) });
    const outcome = await send();
    expect(outcome.ok).toBe(true);
    expect(outcome.responseBody).toHaveLength(2048);
  });

  it('times out a receiver that never answers', async () => {
    receiver.respond = () => 'hang';
    const outcome = await send();
    expect(outcome).toMatchObject({ ok: false, errorClass: 'timeout' });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(250);
    expect(outcome.durationMs).toBeLessThan(15_000); // far from the fast path on a loaded machine; without the timeout it would never end
  });

  it('classifies a refused connection', async () => {
    const url = receiver.url;
    await receiver.close();
    const outcome = await client.send({ url, body: '{}', headers: {} });
    expect(outcome.errorClass).toBe('connection_refused');
  });
});

describe('guarded connector', () => {
  it('connects to the address it checked, resolving the name once per connection, and keeps the Host header', async () => {
    const receiver = await startReceiver(manualClock());
    const resolved: string[] = [];
    // The name exists only in this lookup: reaching the receiver proves the socket went to the checked IP.
    const lookup: HostLookup = async (name) => {
      resolved.push(name);
      return [{ address: '127.0.0.1', family: 4 }];
    };
    const checked: string[] = [];
    const policy = (address: string) => (checked.push(address), undefined);
    const agent = new Agent({ connect: createGuardedConnector({ lookup, connectTimeoutMs: 1_000, policy }) });
    try {
      const port = new URL(receiver.url).port;
      const res = await request(`http://hooks.customer.test:${port}/hook`, { method: 'POST', body: '{}', dispatcher: agent });
      await res.body.text();
      expect(res.statusCode).toBe(200);
      expect(resolved).toEqual(['hooks.customer.test']);
      expect(checked).toEqual(['127.0.0.1']);
      expect(receiver.requests[0]!.headers.host).toBe(`hooks.customer.test:${port}`);
    } finally {
      await agent.close();
      await receiver.close();
    }
  });
});
