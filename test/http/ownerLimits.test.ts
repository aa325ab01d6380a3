import { afterEach, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';
import { launchBody } from '../support/fixtures.js';

type Json = Record<string, any>;

/** Per-owner bounds and the paged deliveries list, through the whole service (docs/api.md, "Bounds"). */
describe('per-owner bounds', () => {
  let t: TestService | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const start = async (env: Record<string, string> = {}) => {
    t = await startTestService({ env: { RATE_LIMIT_PER_MINUTE: '100000', ...env } });
    return t;
  };
  const post = async (s: TestService, path: string, key: string, json?: unknown) => {
    const res = await s.request(path, { method: 'POST', key, ...(json === undefined ? {} : { json }) });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const endpointCount = async (s: TestService, owner: string) =>
    Number((await s.service.db.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<number>().as('n')).where('owner', '=', owner).executeTakeFirstOrThrow()).n);

  it('refuses the 21st webhook endpoint of an owner with 409 limit_reached by default, creating nothing, while another owner still creates', async () => {
    const s = await start();
    const acme = await s.key('acme', ['launches:read', 'launches:write']);
    const globex = await s.key('globex', ['launches:read', 'launches:write']);
    for (let i = 0; i < 20; i++) expect((await post(s, '/api/webhook-endpoints', acme, { url: `http://127.0.0.1:9/hook/${i}` })).status).toBe(201);
    const refused = await post(s, '/api/webhook-endpoints', acme, { url: 'http://127.0.0.1:9/hook/20' });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'limit_reached', details: { limit: 'MAX_ENDPOINTS_PER_OWNER', max: 20 } });
    expect(await endpointCount(s, 'acme')).toBe(20);
    expect((await post(s, '/api/webhook-endpoints', globex, { url: 'http://127.0.0.1:9/other' })).status).toBe(201);

    // Deleting one makes room for one.
    const list = (await (await s.request('/api/webhook-endpoints?limit=1', { key: acme })).json()) as Json;
    expect((await s.request(`/api/webhook-endpoints/${list.endpoints[0].id}`, { method: 'DELETE', key: acme })).status).toBe(204);
    expect((await post(s, '/api/webhook-endpoints', acme, { url: 'http://127.0.0.1:9/hook/again' })).status).toBe(201);
    expect((await post(s, '/api/webhook-endpoints', acme, { url: 'http://127.0.0.1:9/hook/over' })).status).toBe(409);
  });

  it('creates exactly MAX_ENDPOINTS_PER_OWNER endpoints when many creates race', async () => {
    const s = await start({ MAX_ENDPOINTS_PER_OWNER: '3' });
    const acme = await s.key('acme', ['launches:write']);
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => post(s, '/api/webhook-endpoints', acme, { url: `http://127.0.0.1:9/race/${i}` })));
    expect(results.filter((r) => r.status === 201)).toHaveLength(3);
    expect(results.filter((r) => r.status === 409 && r.body.error.details.max === 3)).toHaveLength(9);
    expect(await endpointCount(s, 'acme')).toBe(3);
  });

  it('refuses a launch past MAX_LAUNCHES_IN_FLIGHT_PER_OWNER, releases its Idempotency-Key, and accepts again once one has ended', async () => {
    const s = await start({ MAX_LAUNCHES_IN_FLIGHT_PER_OWNER: '2' });
    const acme = await s.key('acme', ['launches:read', 'launches:write']);
    const globex = await s.key('globex', ['launches:write']);
    const first = await s.createLaunch(acme);
    await s.createLaunch(acme);
    const refused = await s.request('/api/launches', { method: 'POST', key: acme, json: launchBody(), headers: { 'idempotency-key': 'third' } });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as Json).error).toMatchObject({ code: 'limit_reached', details: { limit: 'MAX_LAUNCHES_IN_FLIGHT_PER_OWNER', max: 2 } });
    const listed = (await (await s.request('/api/launches', { key: acme })).json()) as Json;
    expect(listed.pagination.total).toBe(2);
    await s.createLaunch(globex); // another owner's count is its own

    await s.service.db.updateTable('launches').set({ status: 'complete' }).where('id', '=', first).execute();
    const again = await s.request('/api/launches', { method: 'POST', key: acme, json: launchBody(), headers: { 'idempotency-key': 'third' } });
    expect(again.status).toBe(202);
  });

  it('refuses a redelivery past MAX_REDELIVERIES_PER_DELIVERY and pages a launch’s deliveries (default 50, at most 200)', async () => {
    const s = await start({ MAX_REDELIVERIES_PER_DELIVERY: '60' });
    const acme = await s.key('acme', ['launches:read', 'launches:write']);
    const launchId = await s.createLaunch(acme);
    const first = (await (await s.request(`/api/launches/${launchId}/deliveries`, { key: acme })).json()) as Json;
    expect(first.deliveries).toHaveLength(1);
    expect(first.pagination).toEqual({ limit: 50, offset: 0, returned: 1, total: 1, has_more: false, next_offset: null });
    const original = first.deliveries[0].id as string;
    for (let i = 0; i < 60; i++) expect((await post(s, `/api/deliveries/${original}/redeliver`, acme)).status).toBe(202);
    const refused = await post(s, `/api/deliveries/${original}/redeliver`, acme);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'limit_reached', details: { limit: 'MAX_REDELIVERIES_PER_DELIVERY', max: 60 } });

    const page1 = (await (await s.request(`/api/launches/${launchId}/deliveries`, { key: acme })).json()) as Json;
    expect(page1.deliveries).toHaveLength(50);
    expect(page1.pagination).toMatchObject({ limit: 50, offset: 0, returned: 50, total: 61, has_more: true, next_offset: 50 });
    const page2 = (await (await s.request(`/api/launches/${launchId}/deliveries?offset=50`, { key: acme })).json()) as Json;
    expect(page2.pagination).toMatchObject({ returned: 11, has_more: false, next_offset: null });
    const ids = new Set([...page1.deliveries, ...page2.deliveries].map((d: Json) => d.id));
    expect(ids.size).toBe(61);
    const tooMany = await s.request(`/api/launches/${launchId}/deliveries?limit=201`, { key: acme });
    expect(tooMany.status).toBe(400);
    expect(((await tooMany.json()) as Json).error.details.fields[0].field).toBe('limit');
  });

  it('with MAX_REDELIVERIES_PER_DELIVERY=0 refuses every redelivery and queues nothing', async () => {
    const s = await start({ MAX_REDELIVERIES_PER_DELIVERY: '0' });
    const acme = await s.key('acme', ['launches:read', 'launches:write']);
    const launchId = await s.createLaunch(acme);
    const list = (await (await s.request(`/api/launches/${launchId}/deliveries`, { key: acme })).json()) as Json;
    const refused = await post(s, `/api/deliveries/${list.deliveries[0].id}/redeliver`, acme);
    expect(refused.status).toBe(409);
    expect(refused.body.error.details).toEqual({ limit: 'MAX_REDELIVERIES_PER_DELIVERY', max: 0 });
    const rows = await s.service.db.selectFrom('deliveries').select('id').where('launch_id', '=', launchId).execute();
    expect(rows).toHaveLength(1);
  });
});
