import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../packages/webhooks/src/index.js';
import { manualClock } from '../../src/lib/clock.js';
import { commitEvents, insertLaunch, startReceiver, type Receiver } from '../support/webhooks.js';
import { startEndpointHarness, type EndpointHarness } from './support/endpointHarness.js';

type Json = Record<string, any>;

describe('POST /api/webhook-endpoints/{id}/recover with a window (docs/webhooks.md, "Recover")', () => {
  const clock = manualClock(Date.UTC(2026, 5, 1, 12));
  let h: EndpointHarness;
  let receiver: Receiver;
  beforeEach(async () => {
    // Two attempts, 1 s apart: a failure is final (and dead-lettered) after the second.
    h = await startEndpointHarness(clock, { retrySchedule: [0, 1_000] });
    receiver = await startReceiver(clock);
  });
  afterEach(async () => {
    await h.close();
    await receiver.close();
  });

  const drain = () => h.service.engine.dispatcher.drain();
  async function failAll(): Promise<void> {
    await drain();
    clock.advance(1_000);
    await drain();
  }

  it('brings back the dead-lettered deliveries of the events in [since, until) as new attempts of the same deliveries, with the same event ids', async () => {
    const endpoint = await h.createEndpoint({ url: receiver.url });
    const launchReceiver = await startReceiver(clock, '/launch');
    const launchId = await insertLaunch(h.tdb.db, clock, { url: launchReceiver.url, secret: 'whsec_launch_recover_01', box: h.box });
    receiver.respond = () => ({ status: 503 }); // the endpoint's outage
    const before = await commitEvents(h.tdb.db, clock, launchId, 1, 'launch.queued');
    clock.advance(60_000);
    const since = clock.now();
    const inWindow = await commitEvents(h.tdb.db, clock, launchId, 3, 'launch.step_complete');
    clock.advance(60_000);
    const until = clock.now();
    const after = await commitEvents(h.tdb.db, clock, launchId, 1, 'launch.complete');
    await failAll();
    const deliveries = () => h.tdb.db.selectFrom('deliveries').selectAll().where('endpoint_id', '=', endpoint.id).orderBy('created_at').orderBy('id').execute();
    const failed = await deliveries();
    expect(failed.map((d) => d.status)).toEqual(['failed', 'failed', 'failed', 'failed', 'failed']);
    const letters = await h.tdb.db.selectFrom('dead_letters').select(['delivery_id', 'status']).where('status', '=', 'open').execute();
    expect(letters.map((l) => l.delivery_id).sort()).toEqual(expect.arrayContaining(failed.map((d) => d.id)));
    const attemptsBefore = receiver.requests.length;
    expect(attemptsBefore).toBe(10);

    receiver.respond = () => ({ status: 200 }); // the endpoint is back
    clock.advance(3_600_000); // recovered hours later: the window is the events' time, not the recovery's
    const res = await h.call('POST', `/webhook-endpoints/${endpoint.id}/recover`, h.keys.acme, { since: new Date(since).toISOString(), until: new Date(until).toISOString() });
    expect(res.status).toBe(202);
    const byEvent = new Map(failed.map((d) => [d.event_id, d.id]));
    expect(res.body.recovered).toEqual({ since: new Date(since).toISOString(), until: new Date(until).toISOString(), deliveries: 3, deliveryIds: inWindow.map((e) => byEvent.get(e)) });
    await drain();

    // The receiver got the three events of the window again, under their own ids, signed afresh; nothing else.
    const resent = receiver.requests.slice(attemptsBefore).map((r) => verifyWebhook<Json>(r.body, r.headers, endpoint.secret as string, { now: clock.now() }));
    expect(resent.map((v) => v.payload.id).sort()).toEqual([...inWindow].sort());
    expect(resent.every((v) => v.attempt === 1)).toBe(true);
    const now = await deliveries();
    expect(now).toHaveLength(5); // the same deliveries: no new rows
    expect(Object.fromEntries(now.map((d) => [d.event_id, d.status]))).toEqual(
      Object.fromEntries([[before[0], 'failed'], ...inWindow.map((e) => [e, 'delivered']), [after[0], 'failed']]),
    );
    // Each recovered delivery's log: its two failed attempts, then the new series' success, told apart by series.
    const log = (await h.call('GET', `/launches/${launchId}/deliveries`, h.keys.acme)).body.deliveries as Json[];
    const first = log.find((d) => d.id === res.body.recovered.deliveryIds[0])!;
    expect(first.attempts.map((a: Json) => [a.series, a.attempt, a.outcome])).toEqual([
      [1, 1, 'failure'],
      [1, 2, 'failure'],
      [2, 1, 'success'],
    ]);
    const stillOpen = await h.tdb.db.selectFrom('dead_letters').select(['delivery_id', 'status']).execute();
    expect(stillOpen.filter((l) => l.status === 'retried').map((l) => l.delivery_id).sort()).toEqual([...res.body.recovered.deliveryIds].sort());
    // Again: nothing left in that window.
    expect((await h.call('POST', `/webhook-endpoints/${endpoint.id}/recover`, h.keys.acme, { since: new Date(since).toISOString(), until: new Date(until).toISOString() })).body.recovered.deliveries).toBe(0);
    // Without until: everything since, so the one after the window comes back too.
    const rest = await h.call('POST', `/webhook-endpoints/${endpoint.id}/recover`, h.keys.acme, { since: new Date(since).toISOString() });
    expect(rest.body.recovered).toMatchObject({ until: null, deliveries: 1, deliveryIds: [byEvent.get(after[0]!)] });
    await launchReceiver.close();
  });

  it('refuses a bad window with 400 naming the field, and re-queues nothing', async () => {
    const endpoint = await h.createEndpoint({ url: receiver.url });
    receiver.respond = () => ({ status: 500 });
    const launchId = await insertLaunch(h.tdb.db, clock, { url: receiver.url, secret: 'whsec_launch_recover_02', box: h.box });
    await commitEvents(h.tdb.db, clock, launchId, 1, 'launch.queued');
    await failAll();
    const since = new Date(clock.now() - 60_000).toISOString();
    const cases: Array<[Json, string]> = [
      [{ since, until: since }, 'until'],
      [{ since, until: new Date(clock.now() - 120_000).toISOString() }, 'until'],
      [{ since, until: 'tomorrow' }, 'until'],
      [{ since, until: 5 }, 'until'],
      [{ until: since }, 'since'],
      [{ since: new Date(clock.now() + 60_000).toISOString() }, 'since'],
      [{ since, from: since }, 'from'],
    ];
    for (const [body, field] of cases) {
      const res = await h.call('POST', `/webhook-endpoints/${endpoint.id}/recover`, h.keys.acme, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.details.fields.map((f: Json) => f.field), JSON.stringify(body)).toContain(field);
    }
    expect(await h.tdb.db.selectFrom('deliveries').select('status').where('endpoint_id', '=', endpoint.id).execute()).toEqual([{ status: 'failed' }]);
    // Another owner's endpoint is not found, and nothing moves.
    expect((await h.call('POST', `/webhook-endpoints/${endpoint.id}/recover`, h.keys.globex, { since })).status).toBe(404);
    expect(await h.tdb.db.selectFrom('deliveries').select('status').where('endpoint_id', '=', endpoint.id).execute()).toEqual([{ status: 'failed' }]);
  });
});
