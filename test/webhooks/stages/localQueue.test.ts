import { describe, expect, it } from 'vitest';
import { createLocalQueue, type HeldDelivery } from '../../../src/webhooks/dispatch/localQueue.js';
import type { ClaimedDelivery } from '../../../src/webhooks/sql/claimWork.js';

let n = 0;
/** A delivery as the claim returns it (only the fields the queue reads matter). */
function item(host: string, owner: string, over: Partial<ClaimedDelivery> = {}): ClaimedDelivery {
  n += 1;
  return {
    id: `dlv_${n}`,
    launchId: 'lch_1',
    eventId: `evt_${n}`,
    url: `http://${host}/hook`,
    host,
    endpoint: `http://${host}/hook`,
    attempt: 1,
    token: 1,
    leaseExpiresAt: 60_000,
    ctx: { owner } as ClaimedDelivery['ctx'],
    ...over,
  };
}

describe('local queue (dispatch/localQueue.ts)', () => {
  const options = { maxInFlight: 4, maxInFlightPerHost: 2, perOwnerCap: 3, lookahead: 1, prefetch: 0, capOf: () => 2 };

  it('sends in claim order within the global, host and owner caps, and a freed slot takes the next that fits', () => {
    const q = createLocalQueue(options);
    const items = [item('a', 'o1'), item('a', 'o1'), item('a', 'o2'), item('b', 'o1'), item('c', 'o1'), item('d', 'o2')].map((i) => q.hold(i, false, 0));
    const sent: HeldDelivery[] = [];
    for (let next = q.next(); next; next = q.next()) {
      q.began(next);
      sent.push(next);
    }
    // host a is full after two; owner o1 is full after three (a, a, b); c waits for o1; d (o2) fits; then the global cap (4).
    expect(sent.map((i) => i.id)).toEqual([items[0]!.id, items[1]!.id, items[3]!.id, items[5]!.id]);
    expect([q.sending(), q.queued(), q.held()]).toEqual([4, 2, 6]);
    q.ended(items[0]!); // frees host a and owner o1: the head that fits now is the third (a, o2)
    expect(q.next()?.id).toBe(items[2]!.id);
  });

  it('queues a trial first: the next slot its host has goes to it', () => {
    const q = createLocalQueue(options);
    const first = q.hold(item('a', 'o1'), false, 0);
    q.hold(item('a', 'o1'), false, 0);
    q.began(q.next()!);
    q.began(q.next()!); // host a at its cap (2)
    const trial = q.hold(item('a', 'o2'), true, 0);
    expect([q.held(), q.queued()]).toEqual([3, 1]);
    expect(q.next()).toBeUndefined();
    q.ended(first);
    expect(q.next()).toBe(trial);
  });

  it('sends to a host and an endpoint no more at once than the allowance a claim reported, the cap when none was, and forgets it once nothing there is held', () => {
    const q = createLocalQueue({ ...options, maxInFlightPerHost: 4, capOf: () => 3, maxInFlight: 10, perOwnerCap: 10 });
    const held = [1, 2, 3, 4, 5].map(() => q.hold(item('a', 'o1'), false, 0));
    q.allow({ host: 'a', endpoint: 'http://a/hook', hostAllowance: 2, endpointAllowance: 3 });
    const sent: HeldDelivery[] = [];
    for (let next = q.next(); next; next = q.next()) {
      q.began(next);
      sent.push(next);
    }
    expect(sent.length).toBe(2); // the host's allowance: other owners hold the rest of its cap
    q.allow({ host: 'a', endpoint: 'http://a/hook', hostAllowance: 4, endpointAllowance: 1 });
    expect(q.next()).toBeUndefined(); // now the endpoint's: 2 out, 1 allowed
    q.allow({ host: 'a', endpoint: 'http://a/hook', hostAllowance: 9, endpointAllowance: 9 });
    for (let next = q.next(); next; next = q.next()) {
      q.began(next);
      sent.push(next);
    }
    expect(sent.length).toBe(3); // never past the endpoint's own cap (3) whatever was reported
    for (const i of sent) {
      q.ended(i);
      i.finish();
    }
    for (const i of held) i.finish();
    expect(q.held()).toBe(0);
    q.allow({ host: 'b', endpoint: 'http://b/hook', hostAllowance: 0, endpointAllowance: 0 });
    q.hold(item('a', 'o1'), false, 0);
    expect(q.next()).toBeDefined(); // a's allowance was forgotten with its last delivery: the cap again
  });

  it('resolves done for a delivery finished before anyone waited and for one waited on first, and counts what it holds per owner as it goes', async () => {
    const q = createLocalQueue(options);
    const early = q.hold(item('a', 'o1'), false, 0);
    const late = q.hold(item('a', 'o2'), false, 0);
    const waited = late.done;
    expect(q.heldByOwner(new Set())).toEqual(new Map([['o1', 1], ['o2', 1]]));
    early.finish();
    expect(q.heldByOwner(new Set())).toEqual(new Map([['o2', 1]]));
    let lateDone = false;
    void waited.then(() => (lateDone = true));
    await Promise.resolve();
    expect(lateDone).toBe(false);
    late.finish();
    await Promise.all([early.done, waited]);
    expect(lateDone).toBe(true);
    expect(q.heldByOwner(new Set())).toEqual(new Map());
    expect(q.atSomeCap()).toBe(false);
  });

  it('keeps a newer claim of the same delivery held when the older item is released', () => {
    const q = createLocalQueue(options);
    const row = item('a', 'o1');
    const old = q.hold(row, false, 0);
    const newer = q.hold(row, false, 5);
    old.finish();
    expect(q.heldItems()).toEqual([newer]);
    newer.finish();
    expect(q.held()).toBe(0);
  });

  it('reports a lease room reached by what it holds (a claim cut short there must run again): the cap plus the prefetch per host, per endpoint the cap plus at most itself', () => {
    const q = createLocalQueue({ ...options, maxInFlightPerHost: 2, perOwnerCap: 10, prefetch: 2, capOf: (e) => (e.includes('slow') ? 1 : 10) });
    for (let i = 0; i < 3; i++) q.hold(item('a', 'o1'), false, 0);
    expect(q.atSomeCap()).toBe(false);
    q.hold(item('a', 'o1'), false, 0);
    expect(q.atSomeCap()).toBe(true);
    const slow = createLocalQueue({ ...options, maxInFlightPerHost: 10, perOwnerCap: 10, prefetch: 5, capOf: (e) => (e.includes('slow') ? 1 : 10) });
    slow.hold(item('slow', 'o1'), false, 0);
    expect(slow.atSomeCap()).toBe(false);
    slow.hold(item('slow', 'o1'), false, 0);
    expect(slow.atSomeCap()).toBe(true);
  });

  it('reports a cap reached by what it holds (a claim cut short there must run again), per host, endpoint and owner', () => {
    const q = createLocalQueue({ ...options, maxInFlightPerHost: 10, perOwnerCap: 10, capOf: (e) => (e.includes('slow') ? 1 : 10) });
    q.hold(item('a', 'o1'), false, 0);
    expect(q.atSomeCap()).toBe(false);
    q.hold(item('slow', 'o1'), false, 0);
    expect(q.atSomeCap()).toBe(true);
    const byOwner = createLocalQueue({ ...options, maxInFlightPerHost: 10, perOwnerCap: 1, capOf: () => 10 });
    byOwner.hold(item('a', 'o1'), false, 0);
    expect(byOwner.atSomeCap()).toBe(false); // owner cap 1 + lookahead 1
    byOwner.hold(item('b', 'o1'), false, 0);
    expect(byOwner.atSomeCap()).toBe(true);
  });

  it('counts held deliveries per owner without those being settled, and lists the leases that lapse within half a lease', () => {
    const q = createLocalQueue(options);
    const a = item('a', 'o1', { leaseExpiresAt: 10_000 });
    const b = item('a', 'o1', { leaseExpiresAt: 40_000 });
    const c = item('b', 'o2', { leaseExpiresAt: 100_000 });
    for (const i of [a, b, c]) q.hold(i, false, 0);
    expect(q.heldByOwner(new Set([a.id]))).toEqual(new Map([['o1', 1], ['o2', 1]]));
    expect(q.lapsing(20_000, 30_000)).toEqual([a.id]);
    expect(q.lapsing(30_000, 30_000)).toEqual([a.id, b.id]);
    expect(q.takeQueued().length).toBe(3);
    expect(q.queued()).toBe(0);
  });

  it('tells an attempt sent moments ago from one long out, and waits for what it holds up to a bound', async () => {
    const q = createLocalQueue(options);
    const i = q.hold(item('a', 'o1'), false, 0);
    q.began(q.next()!);
    expect(q.youngOut()).toBe(true);
    await new Promise((r) => setTimeout(r, 15));
    expect(q.youngOut()).toBe(false);
    const pending = q.hold(item('b', 'o2'), false, 0);
    i.finish();
    expect(await q.settledWithin(20)).toBe(false);
    setTimeout(() => pending.finish(), 5);
    expect(await q.settledWithin(1_000)).toBe(true);
  });
});
