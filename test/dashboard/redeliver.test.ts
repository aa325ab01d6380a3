import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/lib/clock.js';
import { insertDelivery } from '../../src/webhooks/outbox.js';
import { startTestService } from '../support/service.js';
import { commitEvents, insertLaunch, newSecretBox } from '../support/webhooks.js';
import { signIn } from './support.js';

describe('dashboard redelivery', () => {
  it("repeats a webhook endpoint's delivery to that endpoint, not to the launch's own URL", async () => {
    const t = await startTestService();
    try {
      const db = t.service.db;
      const box = newSecretBox();
      const launchId = await insertLaunch(db, systemClock, { url: 'https://launch.example.com/hook', secret: 'whsec_launch', box });
      const [eventId] = await commitEvents(db, systemClock, launchId, 1);
      const now = Date.now();
      await db
        .insertInto('webhook_endpoints')
        .values({ id: 'we_redeliver', owner: 'acme', url: 'https://endpoint.example.com/hook', description: null, events: '["*"]', signature_scheme: 'service', secret_enc: box.seal('whsec_endpoint'), previous_secret_enc: null, previous_secret_expires_at: null, disabled_at: null, disabled_reason: null, failing_since: null, created_at: now, updated_at: now })
        .execute();
      const original = await insertDelivery(db, now, eventId!, launchId, 'https://endpoint.example.com/hook', 'we_redeliver');
      const { cookie } = await signIn(t, await t.key('root', ['admin']));
      const page = await (await t.request('/dashboard/deliveries', { headers: { cookie } })).text();
      const csrf = /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
      const res = await t.request(`/dashboard/deliveries/${original}/redeliver`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: csrf, back: '/dashboard/deliveries' }).toString(),
      });
      expect(res.status).toBe(303);
      const copies = await db.selectFrom('deliveries').select(['url', 'endpoint_id']).where('event_id', '=', eventId!).where('id', 'not in', [original]).orderBy('url').execute();
      // The repeat goes to the endpoint and counts as its delivery; beside it, the launch's own delivery of the event.
      expect(copies).toEqual([
        { url: 'https://endpoint.example.com/hook', endpoint_id: 'we_redeliver' },
        { url: 'https://launch.example.com/hook', endpoint_id: null },
      ]);
    } finally {
      await t.close();
    }
  });
});
