import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/lib/clock.js';
import { startTestService } from '../support/service.js';
import { commitEvents, insertLaunch, newSecretBox } from '../support/webhooks.js';
import { signIn } from './support.js';

describe('dashboard delivery filters', () => {
  it('show only paused or only canceled deliveries when asked, like the other statuses', async () => {
    const t = await startTestService();
    try {
      const launchId = await insertLaunch(t.service.db, systemClock, { url: 'https://hooks.example.com/a', secret: 'whsec_filters', box: newSecretBox() });
      await commitEvents(t.service.db, systemClock, launchId, 3);
      const ids = (await t.service.db.selectFrom('deliveries').select('id').where('launch_id', '=', launchId).orderBy('id').execute()).map((r) => r.id);
      expect(ids).toHaveLength(3);
      const [paused, canceled, pending] = ids as [string, string, string];
      await t.service.db.updateTable('deliveries').set({ status: 'paused' }).where('id', '=', paused).execute();
      await t.service.db.updateTable('deliveries').set({ status: 'canceled' }).where('id', '=', canceled).execute();
      const { cookie } = await signIn(t, await t.key('root', ['admin']));

      const rowsOf = async (query: string): Promise<Array<[string, string]>> => {
        const res = await t.request(`/dashboard/deliveries${query}`, { headers: { cookie } });
        expect(res.status).toBe(200);
        return [...(await res.text()).matchAll(/data-delivery="([^"]+)" data-status="([^"]+)"/g)].map((m) => [m[1] ?? '', m[2] ?? '']);
      };
      expect(await rowsOf('?status=paused')).toEqual([[paused, 'paused']]);
      expect(await rowsOf('?status=canceled')).toEqual([[canceled, 'canceled']]);
      expect(await rowsOf('?status=pending')).toEqual([[pending, 'pending']]);
      expect((await rowsOf('')).map(([id]) => id).sort()).toEqual([...ids].sort());
      // The filter form offers both.
      const page = await (await t.request('/dashboard/deliveries', { headers: { cookie } })).text();
      expect(page).toContain('<option value="paused"');
      expect(page).toContain('<option value="canceled"');
    } finally {
      await t.close();
    }
  });

  it('list delivered and failed deliveries newest first: delivered rows are left out of the status index, not out of the page', async () => {
    const t = await startTestService();
    try {
      const launchId = await insertLaunch(t.service.db, systemClock, { url: 'https://hooks.example.com/b', secret: 'whsec_filters', box: newSecretBox() });
      await commitEvents(t.service.db, systemClock, launchId, 5);
      const ids = (await t.service.db.selectFrom('deliveries').select('id').where('launch_id', '=', launchId).orderBy('id').execute()).map((r) => r.id);
      const [d1, f1, d2, f2, pending] = ids as [string, string, string, string, string];
      // created_at 1000 apart in id order, so newest first is the reverse of the ids.
      for (const [i, id] of ids.entries()) await t.service.db.updateTable('deliveries').set({ created_at: 1_000 * (i + 1) }).where('id', '=', id).execute();
      await t.service.db.updateTable('deliveries').set({ status: 'delivered' }).where('id', 'in', [d1, d2]).execute();
      await t.service.db.updateTable('deliveries').set({ status: 'failed' }).where('id', 'in', [f1, f2]).execute();
      const { cookie } = await signIn(t, await t.key('root', ['admin']));
      const rowsOf = async (query: string): Promise<string[]> => {
        const res = await t.request(`/dashboard/deliveries${query}`, { headers: { cookie } });
        expect(res.status).toBe(200);
        return [...(await res.text()).matchAll(/data-delivery="([^"]+)" data-status="([^"]+)"/g)].map((m) => `${m[1]}:${m[2]}`);
      };
      expect(await rowsOf('?status=delivered')).toEqual([`${d2}:delivered`, `${d1}:delivered`]);
      expect(await rowsOf('?status=failed')).toEqual([`${f2}:failed`, `${f1}:failed`]);
      expect(await rowsOf('?status=pending')).toEqual([`${pending}:pending`]);
    } finally {
      await t.close();
    }
  });
});
