import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/lib/clock.js';
import { serveOnPort, type ServedService } from '../reliability/support/server.js';
import { startTestService, type TestService } from '../support/service.js';
import { commitEvents, insertLaunch, newSecretBox, startReceiver, type Receiver } from '../support/webhooks.js';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing, screenshotDir } from './support.js';

async function until(check: () => Promise<boolean> | boolean, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// A real headless Chromium (Debian's package, driven by playwright-core) against the whole service on
// a real port: an endpoint's page shows its rate and its ordering, and its recover form works.
describe.skipIf(chromiumMissing !== undefined)(`a webhook endpoint's dashboard page in a real Chromium${chromiumMissing ? ` — skipped: ${chromiumMissing}` : ''}`, { timeout: 90_000 }, () => {
  let t: TestService;
  let http: ServedService;
  let browser: Browser;
  let receiver: Receiver;
  beforeAll(async () => {
    // One attempt per series, and no breaker in the way: the failures must leave dead letters, not an open breaker.
    t = await startTestService({ env: { WEBHOOK_RETRY_SCHEDULE: '0', WEBHOOK_POLL_INTERVAL_MS: '50ms', BREAKER_FAILURE_THRESHOLD: '1000' } });
    http = await serveOnPort(t);
    receiver = await startReceiver(systemClock);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
  });
  afterAll(async () => {
    await browser?.close();
    await http?.close();
    await t?.close();
    await receiver?.close();
  });

  it('shows 3 / s and per-launch ordering, refuses a future window saying why, with nothing re-queued, and brings the failed delivery back to the receiver', async () => {
    const key = await t.key('acme', ['launches:read', 'launches:write']);
    receiver.respond = () => ({ status: 500 });
    const created = await t.request('/api/webhook-endpoints', { method: 'POST', key, json: { url: receiver.url, rateLimitPerSecond: 3, ordering: 'launch' } });
    expect(created.status).toBe(201);
    const { endpoint } = (await created.json()) as { endpoint: { id: string } };
    const db = t.service.db;
    const launchId = await insertLaunch(db, systemClock, { url: 'http://127.0.0.1:9/launch', secret: 'whsec_endpoint_browser_01', box: newSecretBox() });
    const [eventId] = await commitEvents(db, systemClock, launchId, 1, 'launch.queued');
    t.service.start();
    const delivery = () => db.selectFrom('deliveries').select(['id', 'status', 'attempt_count']).where('endpoint_id', '=', endpoint.id).where('event_id', '=', eventId!).executeTakeFirstOrThrow();
    await until(async () => (await delivery()).status === 'failed', 'the failed delivery');
    const failedId = (await delivery()).id;

    const context = await browser.newContext({ baseURL: http.origin, viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto('/dashboard');
    await page.fill('#key', key);
    await Promise.all([page.waitForURL('**/dashboard'), page.click('button[type=submit]')]);

    // From the Endpoints list to the endpoint's page, as a user clicks.
    await page.goto('/dashboard/endpoints');
    await Promise.all([page.waitForURL(`**/dashboard/endpoints/${endpoint.id}`), page.click(`a[href="/dashboard/endpoints/${endpoint.id}"]`)]);
    expect((await page.textContent('[data-rate]'))?.trim()).toBe('3 / s');
    expect(await page.textContent('[data-ordering]')).toContain("per launch: each launch's events one at a time, in sequence order");
    const since = await page.inputValue('form[data-recover] input[name=since]');
    expect(since).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d$/); // a datetime-local field, prefilled 24 h back
    await page.screenshot({ path: join(screenshotDir(), 'dashboard-endpoint.png'), fullPage: true });

    // A window that starts in the future is refused, and nothing is re-queued.
    const ahead = new Date(Date.now() + 3_600_000).toISOString().slice(0, 16);
    await page.fill('form[data-recover] input[name=since]', ahead);
    const refused = await Promise.all([page.waitForNavigation(), page.click('form[data-recover] button[type=submit]')]).then(([res]) => res);
    expect(refused?.status()).toBe(409);
    expect(await page.textContent('body')).toContain('Not done');
    expect(await page.textContent('body')).toContain('since must not be in the future');
    expect((await delivery()).status).toBe('failed');

    // The receiver is back: the form's own default window brings the same deliveries back (the
    // owner's funding events to this endpoint failed too), and they arrive.
    const failedRows = () => db.selectFrom('deliveries').select('id').where('endpoint_id', '=', endpoint.id).where('status', '=', 'failed').execute();
    const failedCount = (await failedRows()).length;
    expect(failedCount).toBeGreaterThanOrEqual(1);
    receiver.respond = () => ({ status: 200 });
    await page.goto(`/dashboard/endpoints/${endpoint.id}`);
    await Promise.all([page.waitForURL(/notice=recovered/), page.click('form[data-recover] button[type=submit]')]);
    expect(await page.textContent('body')).toContain(`Deliveries brought back. (${failedCount})`);
    await until(async () => (await delivery()).status === 'delivered' && (await failedRows()).length === 0, 'the recovered deliveries');
    expect((await delivery()).id).toBe(failedId);
    const sent = receiver.requests.filter((r) => r.headers['x-service-event-id'] === eventId);
    expect(sent.map((r) => r.headers['x-service-attempt'])).toEqual(['1', '1']); // failed, then the recovered series' first
    await context.close();
  });
});
