import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/lib/clock.js';
import { launchBody, TOKEN_LAUNCH_EVENTS } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';
import { startReceiver, type Receiver } from '../support/webhooks.js';

type Json = Record<string, any>;

let t: TestService;
let relay: Receiver;

beforeAll(async () => {
  // One shared relay host: owner A's path is broken, owner B's path works.
  relay = await startReceiver(systemClock, '/');
  relay.respond = (req) => (req.url.startsWith('/owner-a') ? { status: 500, body: 'broken' } : { status: 200, body: 'ok' });
  // A reset window far longer than the test: with a host-keyed breaker B would wait all of it.
  t = await startTestService({ env: { BREAKER_RESET_TIMEOUT: '10m', WEBHOOK_RETRY_SCHEDULE: '0,1s,1s,1s,1s', WEBHOOK_POLL_INTERVAL_MS: '50', RATE_LIMIT_PER_MINUTE: '100000' } });
  t.service.start();
});
afterAll(async () => {
  await t?.close();
  await relay?.close();
});

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('two owners on one shared webhook host, through the running service', () => {
  it("B's launch events are delivered while A's endpoint on the same host is open", async () => {
    const acme = await t.key('acme', ['launches:write', 'launches:read']);
    const globex = await t.key('globex', ['launches:write', 'launches:read']);
    const admin = await t.key('ops', ['admin']);
    const origin = new URL(relay.url).origin;

    const a = await t.request('/api/launches', { method: 'POST', key: acme, json: launchBody({ webhookUrl: `${origin}/owner-a/hooks` }) });
    expect(a.status).toBe(202);
    const aId = ((await a.json()) as Json).launch.id as string;
    await until(() => t.service.breakers.snapshot()[new URL(relay.url).host]?.state === 'open', "A's breaker to open");

    const b = await t.request('/api/launches', { method: 'POST', key: globex, json: launchBody({ webhookUrl: `${origin}/owner-b/hooks` }) });
    expect(b.status).toBe(202);
    const bId = ((await b.json()) as Json).launch.id as string;
    const bEvents = () => relay.requests.filter((r) => r.url === '/owner-b/hooks').map((r) => JSON.parse(r.body) as { event: string; launchId: string; sequence: number });
    await until(() => bEvents().length >= TOKEN_LAUNCH_EVENTS.length, "B's six events");
    expect(bEvents().sort((x, y) => x.sequence - y.sequence).map((e) => e.event)).toEqual(TOKEN_LAUNCH_EVENTS);
    expect(bEvents().every((e) => e.launchId === bId)).toBe(true);

    // A's endpoint is still open and its waiting deliveries spent no attempts while B's went out.
    const breakers = ((await (await t.request('/api/breakers', { key: admin })).json()) as Json).breakers as Json[];
    expect(breakers.find((x) => x.endpoint.endsWith('/owner-a/hooks'))).toMatchObject({ state: 'open' });
    expect(breakers.find((x) => x.endpoint.endsWith('/owner-b/hooks'))).toBeUndefined();
    const aDeliveries = ((await (await t.request(`/api/launches/${aId}/deliveries`, { key: acme })).json()) as Json).deliveries as Json[];
    expect(aDeliveries.every((d) => d.status === 'pending')).toBe(true);
  });
});
