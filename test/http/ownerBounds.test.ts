import { afterEach, describe, expect, it } from 'vitest';
import { signIn } from '../dashboard/support.js';
import { serveOnPort, type ServedService } from '../reliability/support/server.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

type Json = Record<string, any>;

/** An admin's per-owner overrides of the owner bounds, through the served service (docs/api.md, "Owner bounds"). */
describe('PUT /api/owners/{owner}/bounds', () => {
  let t: TestService | undefined;
  let http: ServedService | undefined;
  afterEach(async () => {
    await http?.close();
    await t?.close();
    http = t = undefined;
  });

  const start = async (env: Record<string, string> = {}) => {
    t = await startTestService({ env: { RATE_LIMIT_PER_MINUTE: '100000', ...env } });
    http = await serveOnPort(t);
    return t;
  };
  const call = async (method: string, path: string, key: string, json?: unknown) => {
    const res = await http!.send(method, path, {
      headers: { authorization: `Bearer ${key}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(json === undefined ? {} : { body: typeof json === 'string' ? json : JSON.stringify(json) }),
    });
    return { status: res.status, body: (res.text === '' ? {} : JSON.parse(res.text)) as Json };
  };
  const overrideRows = async () => t!.service.db.selectFrom('owner_bounds').selectAll().execute();
  const endpointCount = async (owner: string) =>
    Number((await t!.service.db.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<number>().as('n')).where('owner', '=', owner).executeTakeFirstOrThrow()).n);

  it('lets an owner raised to 25 endpoints create its 21st to 25th, refuses its 26th, holds another owner at 20, and clearing restores the default', async () => {
    const s = await start();
    const admin = await s.key('ops', ['admin']);
    const acme = await s.key('acme', ['launches:read', 'launches:write']);
    const globex = await s.key('globex', ['launches:read', 'launches:write']);

    const raised = await call('PUT', '/api/owners/acme/bounds', admin, { endpoints: 25 });
    expect(raised.status).toBe(200);
    expect(raised.body).toEqual({ bounds: { owner: 'acme', endpoints: 25, launchesInFlight: 50, redeliveries: 20, overrides: { endpoints: 25, launchesInFlight: null, redeliveries: null } } });

    for (let i = 0; i < 25; i++) expect((await call('POST', '/api/webhook-endpoints', acme, { url: `http://127.0.0.1:9/acme/${i}` })).status, `endpoint ${i + 1}`).toBe(201);
    const refused = await call('POST', '/api/webhook-endpoints', acme, { url: 'http://127.0.0.1:9/acme/25' });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'limit_reached', details: { limit: 'MAX_ENDPOINTS_PER_OWNER', max: 25 } });
    expect(await endpointCount('acme')).toBe(25);

    for (let i = 0; i < 20; i++) expect((await call('POST', '/api/webhook-endpoints', globex, { url: `http://127.0.0.1:9/globex/${i}` })).status).toBe(201);
    const globexRefused = await call('POST', '/api/webhook-endpoints', globex, { url: 'http://127.0.0.1:9/globex/20' });
    expect(globexRefused.status).toBe(409);
    expect(globexRefused.body.error.details).toEqual({ limit: 'MAX_ENDPOINTS_PER_OWNER', max: 20 });
    expect((await call('GET', '/api/owners/globex/bounds', admin)).body.bounds).toMatchObject({ endpoints: 20, overrides: { endpoints: null } });

    // null clears the override: acme is back at the default, its 25 endpoints kept, none more.
    const cleared = await call('PUT', '/api/owners/acme/bounds', admin, { endpoints: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.bounds).toEqual({ owner: 'acme', endpoints: 20, launchesInFlight: 50, redeliveries: 20, overrides: { endpoints: null, launchesInFlight: null, redeliveries: null } });
    expect(await overrideRows()).toEqual([]);
    const afterClear = await call('POST', '/api/webhook-endpoints', acme, { url: 'http://127.0.0.1:9/acme/again' });
    expect(afterClear.status).toBe(409);
    expect(afterClear.body.error.details).toEqual({ limit: 'MAX_ENDPOINTS_PER_OWNER', max: 20 });
    expect(await endpointCount('acme')).toBe(25);
  });

  it('replaces the configured bound for launches in flight and redeliveries of that owner only', async () => {
    const s = await start({ MAX_LAUNCHES_IN_FLIGHT_PER_OWNER: '3', MAX_REDELIVERIES_PER_DELIVERY: '1' });
    const admin = await s.key('ops', ['admin']);
    const acme = await s.key('acme', ['launches:read', 'launches:write']);
    const globex = await s.key('globex', ['launches:read', 'launches:write']);

    expect((await call('PUT', '/api/owners/acme/bounds', admin, { launchesInFlight: 1, redeliveries: 3 })).body.bounds).toMatchObject({ launchesInFlight: 1, redeliveries: 3 });
    const launchId = await s.createLaunch(acme);
    const second = await call('POST', '/api/launches', acme, launchBody());
    expect(second.status).toBe(409);
    expect(second.body.error).toMatchObject({ code: 'limit_reached', details: { limit: 'MAX_LAUNCHES_IN_FLIGHT_PER_OWNER', max: 1 } });
    for (let i = 0; i < 3; i++) await s.createLaunch(globex);
    expect((await call('POST', '/api/launches', globex, launchBody())).body.error.details).toEqual({ limit: 'MAX_LAUNCHES_IN_FLIGHT_PER_OWNER', max: 3 });

    const original = (await call('GET', `/api/launches/${launchId}/deliveries`, acme)).body.deliveries[0].id as string;
    for (let i = 0; i < 3; i++) expect((await call('POST', `/api/deliveries/${original}/redeliver`, acme)).status).toBe(202);
    const refused = await call('POST', `/api/deliveries/${original}/redeliver`, acme);
    expect(refused.status).toBe(409);
    expect(refused.body.error.details).toEqual({ limit: 'MAX_REDELIVERIES_PER_DELIVERY', max: 3 });

    const globexLaunch = (await call('GET', '/api/launches', globex)).body.launches[0].id as string;
    const globexDelivery = (await call('GET', `/api/launches/${globexLaunch}/deliveries`, globex)).body.deliveries[0].id as string;
    expect((await call('POST', `/api/deliveries/${globexDelivery}/redeliver`, globex)).status).toBe(202);
    expect((await call('POST', `/api/deliveries/${globexDelivery}/redeliver`, globex)).body.error.details).toEqual({ limit: 'MAX_REDELIVERIES_PER_DELIVERY', max: 1 });
  });

  it('shows each owner’s bounds on the dashboard’s funding page, an override marked as set for that owner', async () => {
    const s = await start({ MAX_LAUNCHES_IN_FLIGHT_PER_OWNER: '7' });
    const admin = await s.key('ops', ['admin']);
    const acme = await s.key('acme', ['launches:read', 'launches:write']);
    const globex = await s.key('globex', ['launches:read', 'launches:write']);
    // Each owner's funding wallet (the page shows one card per wallet).
    for (const key of [acme, globex]) expect((await call('GET', '/api/funding', key)).status).toBe(200);
    expect((await call('PUT', '/api/owners/acme/bounds', admin, { endpoints: 25, redeliveries: 0 })).status).toBe(200);

    const { cookie } = await signIn(s, admin);
    const html = await (await http!.send('GET', '/dashboard/funding', { headers: { cookie } })).text;
    const bound = (owner: string, name: string) => {
      const card = html.slice(html.indexOf(`data-owner="${owner}"`));
      const match = new RegExp(`data-bound="${name}" data-source="(\\w+)">(\\d+)`).exec(card);
      return match ? { source: match[1], value: Number(match[2]) } : undefined;
    };
    expect(bound('acme', 'endpoints')).toEqual({ source: 'override', value: 25 });
    expect(bound('acme', 'launchesInFlight')).toEqual({ source: 'default', value: 7 });
    expect(bound('acme', 'redeliveries')).toEqual({ source: 'override', value: 0 });
    expect(bound('globex', 'endpoints')).toEqual({ source: 'default', value: 20 });
    expect(bound('globex', 'redeliveries')).toEqual({ source: 'default', value: 20 });
  });

  it('answers 403 to keys without admin and writes nothing', async () => {
    const s = await start();
    const acme = await s.key('acme', ['launches:read', 'launches:write']);
    for (const method of ['PUT', 'GET']) {
      const res = await call(method, '/api/owners/acme/bounds', acme, method === 'PUT' ? { endpoints: 100 } : undefined);
      expect(res.status, method).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'forbidden', details: { required_scope: 'admin' } });
    }
    expect(await overrideRows()).toEqual([]);
    // The owner is still held at the default.
    for (let i = 0; i < 20; i++) await call('POST', '/api/webhook-endpoints', acme, { url: `http://127.0.0.1:9/acme/${i}` });
    expect((await call('POST', '/api/webhook-endpoints', acme, { url: 'http://127.0.0.1:9/acme/20' })).status).toBe(409);
  });

  it('refuses bad bounds with 400 invalid_request naming each field, and changes nothing', async () => {
    const s = await start();
    const admin = await s.key('ops', ['admin']);
    expect((await call('PUT', '/api/owners/acme/bounds', admin, { redeliveries: 5 })).status).toBe(200);
    const before = await overrideRows();

    const cases: Array<[unknown, string | undefined]> = [
      [{ endpoints: '25' }, 'endpoints'],
      [{ endpoints: 2.5 }, 'endpoints'],
      [{ endpoints: -1 }, 'endpoints'],
      [{ endpoints: 100_001 }, 'endpoints'],
      [{ launchesInFlight: 1_000_001 }, 'launchesInFlight'],
      [{ redeliveries: 10_001 }, 'redeliveries'],
      [{ redeliveries: true }, 'redeliveries'],
      [{ endpoints: 25, maxEndpoints: 25 }, 'maxEndpoints'],
      [{}, undefined],
      [[25], undefined],
      ['25', undefined],
    ];
    for (const [body, field] of cases) {
      const res = await call('PUT', '/api/owners/acme/bounds', admin, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      if (field) expect(res.body.error.details.fields.map((f: Json) => f.field), JSON.stringify(body)).toContain(field);
    }
    const badOwner = await call('PUT', `/api/owners/${encodeURIComponent('a b')}/bounds`, admin, { endpoints: 25 });
    expect(badOwner.status).toBe(400);
    expect(badOwner.body.error.details.fields).toEqual([{ field: 'owner', message: 'invalid' }]);
    const notJson = await call('PUT', '/api/owners/acme/bounds', admin, '{"endpoints": 25');
    expect(notJson.status).toBe(400);

    expect(await overrideRows()).toEqual(before);
    expect((await call('GET', '/api/owners/acme/bounds', admin)).body.bounds.overrides).toEqual({ endpoints: null, launchesInFlight: null, redeliveries: 5 });
  });
});
