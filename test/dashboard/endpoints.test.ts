import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/lib/clock.js';
import { startTestService } from '../support/service.js';
import { commitEvents, insertLaunch, newSecretBox, startReceiver } from '../support/webhooks.js';
import { signIn } from './support.js';

async function until(check: () => Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('dashboard: a webhook endpoint page', () => {
  it('shows the rate limit and the ordering, and its recover form brings the failed delivery back to the endpoint', async () => {
    // No breaker in the way: the launch's three events all fail before the recover, and three failures would open it for 5 min.
    const t = await startTestService({ env: { WEBHOOK_RETRY_SCHEDULE: '0', WEBHOOK_POLL_INTERVAL_MS: '50ms', BREAKER_FAILURE_THRESHOLD: '1000' } });
    const receiver = await startReceiver(systemClock);
    try {
      const key = await t.key('acme', ['launches:read', 'launches:write']);
      receiver.respond = () => ({ status: 500 });
      const created = await t.request('/api/webhook-endpoints', { method: 'POST', key, json: { url: receiver.url, rateLimitPerSecond: 3, ordering: 'launch' } });
      expect(created.status).toBe(201);
      const { endpoint } = (await created.json()) as { endpoint: { id: string } };
      const db = t.service.db;
      const launchId = await insertLaunch(db, systemClock, { url: 'http://127.0.0.1:9/launch', secret: 'whsec_dashboard_recover', box: newSecretBox() });
      const [eventId] = await commitEvents(db, systemClock, launchId, 1, 'launch.queued');
      t.service.start();
      const delivery = () => db.selectFrom('deliveries').select(['id', 'status']).where('endpoint_id', '=', endpoint.id).where('event_id', '=', eventId!).executeTakeFirstOrThrow();
      await until(async () => (await delivery()).status === 'failed', 'the failed delivery');
      const failed = await delivery();

      const { cookie } = await signIn(t, key);
      const list = await (await t.request('/dashboard/endpoints', { headers: { cookie } })).text();
      expect(list).toContain(`href="/dashboard/endpoints/${endpoint.id}"`);
      expect(list).toContain('>3 / s</td>');
      expect(list).toContain('>per launch</td>');
      const page = await (await t.request(`/dashboard/endpoints/${endpoint.id}`, { headers: { cookie } })).text();
      expect(page).toContain('3 / s');
      expect(page).toContain('events one at a time, in sequence order');
      expect(page).toContain(`action="/dashboard/endpoints/${endpoint.id}/recover"`);
      const csrf = /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';

      // A window in the future is refused, nothing re-queued.
      const ahead = new Date(Date.now() + 3_600_000).toISOString().slice(0, 16);
      const refused = await t.request(`/dashboard/endpoints/${endpoint.id}/recover`, { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ _csrf: csrf, since: ahead }).toString() });
      expect(refused.status).toBe(409);
      expect((await delivery()).status).toBe('failed');

      receiver.respond = () => ({ status: 200 });
      const since = new Date(Date.now() - 3_600_000).toISOString().slice(0, 16); // datetime-local, read as UTC
      const res = await t.request(`/dashboard/endpoints/${endpoint.id}/recover`, { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ _csrf: csrf, since, until: '' }).toString() });
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toMatch(new RegExp(`^/dashboard/endpoints/${endpoint.id}\\?notice=recovered&n=\\d$`));
      await until(async () => (await delivery()).status === 'delivered', 'the recovered delivery');
      expect((await delivery()).id).toBe(failed.id);
      expect(receiver.requests.filter((r) => r.headers['x-service-event-id'] === eventId)).toHaveLength(2); // failed, then recovered
      const after = await (await t.request(res.headers.get('location')!, { headers: { cookie } })).text();
      expect(after).toMatch(/Deliveries brought back\. \(\d\)/);

      // Another owner's endpoint is not found.
      const { cookie: other } = await signIn(t, await t.key('globex', ['launches:read', 'launches:write']));
      expect((await t.request(`/dashboard/endpoints/${endpoint.id}`, { headers: { cookie: other } })).status).toBe(404);
    } finally {
      await t.close();
      await receiver.close();
    }
  });
});
