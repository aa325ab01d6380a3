import { describe, expect, it } from 'vitest';
import { createClaimPolicy, SPENT_CHECK_MS, turnClaims } from '../../../src/webhooks/dispatch/claimPolicy.js';
import type { BreakerRegistry } from '../../../src/webhooks/breakerRegistry.js';
import type { DeliveryOffer } from '../../../src/webhooks/sql/claimWork.js';

const offer = (id: string) => ({ id }) as DeliveryOffer;

function policy(everyTurnClaims: boolean) {
  let now = 1_000_000;
  let wakes = 0;
  const p = createClaimPolicy({ everyTurnClaims, pollIntervalMs: 500, wake: () => void (wakes += 1), now: () => now });
  return { p, tick: (ms: number) => void (now += ms), wakes: () => wakes };
}

const done = { offersLeft: 0, failed: false, cutShort: () => false };

describe('claim policy (dispatch/claimPolicy.ts)', () => {
  it('SQLite: searches only while something may be found, leases handed-over deliveries by id meanwhile', () => {
    const { p, tick } = policy(false);
    let plan = p.plan(true, false);
    expect(plan.search).toBe(true); // the first turn searches
    p.ran(plan, p.spentDue(plan));
    expect(p.finished(plan, done)).toBe(false);
    expect(p.plan(true, false).search).toBe(false); // it took everything: nothing to look for
    p.notify({ complete: true, offers: [offer('d1'), offer('d2')] });
    plan = p.plan(true, false);
    expect([plan.search, plan.adopt, plan.offers.length]).toEqual([false, true, 2]);
    expect(p.finished(plan, { ...done, offersLeft: 1 })).toBe(true); // an offer without a slot: look again
    expect(p.plan(true, false).search).toBe(true);
    const again = p.plan(true, false);
    p.finished(again, done);
    p.notify({ complete: false, offers: [] }); // a commit this process could not describe
    expect(p.plan(true, false).search).toBe(true);
    tick(10);
    const quiet = p.plan(true, false);
    p.ran(quiet, false);
    p.finished(quiet, done);
    expect(p.plan(true, false).search).toBe(false);
    tick(500); // a poll interval: retries may have come due
    expect(p.plan(true, false).search).toBe(true);
  });

  it('SQLite: offers that only wanted a slot wait for the next turn (a settle brings it) and are leased by id then, without a search', () => {
    const { p } = policy(false);
    const first = p.plan(true, false);
    p.ran(first, p.spentDue(first));
    p.finished(first, done);
    p.notify({ complete: true, offers: [offer('d1'), offer('d2'), offer('d3')] });
    let plan = p.plan(true, false);
    expect([plan.search, plan.adopt]).toEqual([false, true]);
    // d1 leased; d2 and d3 found no slot while deliveries are held: kept, no search, no wake.
    expect(p.finished(plan, { ...done, offersLeft: 2, offersWaiting: [offer('d2'), offer('d3')], willSettle: true })).toBe(false);
    p.notify({ complete: true, offers: [offer('d4')] }); // a commit during the wait: after the waiting ones
    plan = p.plan(true, false);
    expect([plan.search, plan.adopt, plan.offers.map((o) => o.id)]).toEqual([false, true, ['d2', 'd3', 'd4']]);
    // One left for another reason (a breaker, a changed destination): the next turn searches.
    p.finished(plan, { ...done, offersLeft: 2, offersWaiting: [offer('d4')], willSettle: true });
    plan = p.plan(true, false);
    expect([plan.search, plan.offers.length]).toEqual([true, 1]); // the search finds d4 in the table
    p.ran(plan, false);
    p.finished(plan, done);
    // Nothing held, so no settle will bring a turn: a waiting offer is left to a search at once.
    p.notify({ complete: true, offers: [offer('d5')] });
    plan = p.plan(true, false);
    expect(p.finished(plan, { ...done, offersLeft: 1, offersWaiting: [offer('d5')], willSettle: false })).toBe(true);
    expect(p.plan(true, false).search).toBe(true);
  });

  it('keeps searching after a search cut short, a retry settled, an ordered settle, or a notify() during the turn', () => {
    const { p } = policy(false);
    const cut = p.plan(true, false);
    p.finished(cut, { ...done, cutShort: () => true });
    expect(p.plan(true, false).search).toBe(true);
    const during = p.plan(true, false);
    p.notify();
    p.finished(during, done); // the notify came while it ran: what it announced may not have been seen
    expect(p.plan(true, false).search).toBe(true);
    for (const [result, ordered] of [['retrying', false], ['lease_lost', false], ['delivered', true]] as const) {
      const clear = p.plan(true, false);
      p.ran(clear, false);
      p.finished(clear, done);
      expect(p.plan(true, false).search).toBe(false);
      p.settled(result, ordered);
      expect(p.plan(true, false).search).toBe(true);
    }
  });

  it('PostgreSQL: every claiming turn searches and hand-overs are not taken', () => {
    const { p } = policy(true);
    p.notify({ complete: true, offers: [offer('d1')] });
    const plan = p.plan(true, false);
    expect([plan.search, plan.adopt, plan.offers.length]).toEqual([true, false, 0]);
    p.finished(plan, done);
    expect(p.plan(true, false).search).toBe(true);
    expect(p.plan(false, false).search).toBe(false); // a turn that only settles
  });

  it('fails spent deliveries at most once per SPENT_CHECK_MS, in searching turns only', () => {
    const { p, tick } = policy(true);
    const first = p.plan(true, false);
    expect(p.spentDue(first)).toBe(true);
    p.ran(first, true);
    expect(p.spentDue(p.plan(true, false))).toBe(false);
    tick(SPENT_CHECK_MS);
    expect(p.spentDue(p.plan(true, false))).toBe(true);
    expect(p.spentDue(p.plan(false, false))).toBe(false);
  });

  it('wakes for a throttled endpoint\'s next slot (the earliest one), and not once stopped', async () => {
    const { p, wakes } = policy(false);
    p.wakeForSlot(100); // a slot 12 ms on
    p.wakeForSlot(0.05); // 24 s on, later than the one already set: no new timer
    // The wake must come from the 12 ms timer: had the later slot replaced it, none would come before
    // 24 s. The 10 s deadline is far from both (a busy machine delays a timer, not by seconds).
    const t0 = Date.now();
    while (wakes() === 0 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 2));
    expect(wakes()).toBe(1);
    p.stop();
    p.wakeForSlot(100);
    await new Promise((r) => setTimeout(r, 200));
    expect(wakes()).toBe(1);
  });

  it('puts the half-open trials first (one delivery each, their host only) and the ordinary claim after, blocked endpoints left out', () => {
    const began: string[] = [];
    const breakers = {
      trialEndpoints: () => ['http://a/h', 'http://b/h'],
      beginTrial: (e: string) => (began.push(e), e !== 'http://b/h'),
      blockedEndpoints: () => ['http://b/h'],
    } as unknown as BreakerRegistry;
    const base = { owner: 'dsp_1', now: 1, leaseMs: 30_000, perHostCap: 8, maxAttempts: 5 };
    const plan = { search: true, adopt: false, offers: [], now: 1, notifiedBefore: 0 };
    const out = turnClaims({ plan, breakers, room: 10, bound: (n) => n, base, running: () => ['dlv_x'] });
    expect(out.trials).toEqual(['http://a/h']);
    expect(out.claims.map((c) => [c.limit, c.onlyHost, c.onlyEndpoint, c.excludeEndpoints, c.running])).toEqual([
      [1, 'a', 'http://a/h', [], ['dlv_x']],
      [9, undefined, undefined, ['http://b/h'], ['dlv_x']],
    ]);
    expect(out.generalLimit).toBe(9);
    const busy = turnClaims({ plan, breakers, room: 10, bound: (n) => Math.min(n, 3), base, running: () => [] });
    expect(busy.generalLimit).toBe(0); // bounded by a busy loop: cut short, search again
    const adopt = turnClaims({ plan: { ...plan, search: false, adopt: true, offers: [offer('d1')] }, breakers, room: 4, bound: (n) => n, base, running: () => [] });
    expect([adopt.claims.length, adopt.offerArgs?.limit, adopt.offerArgs?.admits('http://b/h'), adopt.offerArgs?.admits('http://a/h')]).toEqual([0, 4, false, true]);
  });
});
