import type { BreakerRegistry } from '../breakerRegistry.js';
import { hostOfEndpoint } from '../endpointKey.js';
import type { DeliveryHandoff } from '../outbox.js';
import type { ClaimArgs } from '../sql/claimDeliveries.js';
import type { LeaseOfferedArgs } from '../sql/leaseOffered.js';
import type { DeliveryOffer } from '../sql/claimWork.js';
import { slotSpacingMs } from '../sql/throttle.js';

/** How often spent deliveries (last attempt never settled, lease expired) are looked for. */
export const SPENT_CHECK_MS = 1_000;
/** Offers waiting for a turn, at most; beyond that the table is searched (an ordinary claim finds them too). */
export const MAX_OFFERED = 256;

export interface ClaimPolicyOptions {
  /** PostgreSQL: other instances add deliveries unannounced, so every claiming turn searches and offers are not taken. */
  everyTurnClaims: boolean;
  pollIntervalMs: number;
  /** Wakes the dispatcher's loop. */
  wake(): void;
  /** The lease clock. */
  now(): number;
}

/** What one turn does: search the table (the ordinary claim), or lease the handed-over offers by id. */
export interface TurnPlan {
  search: boolean;
  adopt: boolean;
  offers: DeliveryOffer[];
  /** The lease clock when the turn began. */
  now: number;
  /** notify() calls seen when the turn began. */
  notifiedBefore: number;
}

/** How a turn went, for {@link ClaimPolicy.finished}. */
export interface TurnResult {
  /** Offers that found no slot (or a failed turn). */
  offersLeft: number;
  /** The offers among those left that only wanted a slot (LeaseOfferedResult.waiting). */
  offersWaiting?: DeliveryOffer[];
  /** Some held delivery will settle (a turn follows that may lease the waiting offers). */
  willSettle?: boolean;
  failed: boolean;
  /** The search was cut short (its limit, no room, a host or owner at its cap, a breaker not closed, trials). */
  cutShort(): boolean;
}

/**
 * The claim policy: when a turn searches the table, when it leases what was handed over at commit,
 * when it fails spent deliveries, and when a throttled endpoint's next send slot wakes it.
 *
 * `claimable` says whether the ordinary claim may find work: raised by `notify()` without a
 * complete handoff (a commit added deliveries this dispatcher was not told about), kept while the
 * last claim was cut short or while a settle or an offer left a delivery pending, cleared by a
 * claim that took everything there was. On SQLite this process is the only writer, so every
 * delivery it could claim was announced by `notify()` — most of them handed over — or comes due
 * later (a retry), and the ordinary claim runs only when it may find something, and at least once
 * a poll interval for retries coming due. (Before, every turn searched: while events arrived one at
 * a time most searches found nothing, and each cost the lane walk and the candidate read, ~0.15 ms.)
 */
export interface ClaimPolicy {
  /** A commit added deliveries (handed over when `handoff` is complete), or something claimable changed. */
  notify(handoff?: DeliveryHandoff): void;
  /** What a turn that may claim (`claim`; `force`: search whatever the state) does now. */
  plan(claim: boolean, force: boolean): TurnPlan;
  /** The breakers could not be loaded: the turn neither searches nor adopts. */
  unprepared(plan: TurnPlan): void;
  /** Whether the turn also fails spent deliveries (a searching turn, at most once per SPENT_CHECK_MS). */
  spentDue(plan: TurnPlan): boolean;
  /** The turn's transaction runs now (with the spent check when `spentDue`). */
  ran(plan: TurnPlan, spentDue: boolean): void;
  /** A settle's result: a retry, an unsettled item or an ordered endpoint's settle may free work. */
  settled(result: string, ordered: boolean): void;
  /** After the turn's transaction; true when the loop should be woken to search again. */
  finished(plan: TurnPlan, result: TurnResult): boolean;
  /** A throttled endpoint had a delivery claimed now: wake for its next send slot (sql/throttle.ts). */
  wakeForSlot(rate: number): void;
  /** Stops the slot timer and takes no more slots. */
  stop(): void;
  /** The next stop lifts. */
  start(): void;
}

export function createClaimPolicy(options: ClaimPolicyOptions): ClaimPolicy {
  let claimable = true;
  /** Counts `notify()` calls that raised `claimable`: a claim clears it only when none came while it ran. */
  let notified = 0;
  /**
   * Deliveries committed by this process and handed over with their commit's `notify(handoff)`:
   * the next turn leases them by id (sql/leaseOffered.ts) instead of searching the table and reading
   * their event, launch and secrets. A turn whose ordinary claim runs drops them: it finds them in the table.
   */
  const offered: DeliveryOffer[] = [];
  /** When the ordinary claim last ran, and when spent deliveries are next looked for (the lease clock). */
  let lastSearchAt = -Infinity;
  let nextSpentCheckAt = -Infinity;
  let stopped = false;
  let slotTimer: NodeJS.Timeout | undefined;
  let slotAt = Infinity;

  function raise(): void {
    notified += 1;
    claimable = true;
  }

  return {
    notify(handoff) {
      if (handoff?.complete && !options.everyTurnClaims && offered.length + handoff.offers.length <= MAX_OFFERED) offered.push(...handoff.offers);
      else raise();
    },
    plan(claim, force) {
      const now = options.now();
      const search = claim && (force || claimable || options.everyTurnClaims || now - lastSearchAt >= options.pollIntervalMs);
      const offers = offered.splice(0);
      const adopt = claim && !search && offers.length > 0;
      if (!claim && offers.length > 0) claimable = true; // left in the table for a later claim
      return { search, adopt, offers, now, notifiedBefore: notified };
    },
    unprepared(plan) {
      if (plan.adopt) claimable = true;
      plan.search = plan.adopt = false;
    },
    spentDue: (plan) => plan.search && plan.now >= nextSpentCheckAt,
    ran(plan, spentDue) {
      if (spentDue) nextSpentCheckAt = plan.now + SPENT_CHECK_MS;
      if (plan.search) lastSearchAt = plan.now;
    },
    settled(result, ordered) {
      if (result !== 'delivered' && result !== 'failed') claimable = true;
      if (ordered) claimable = true; // the launch's next event to that endpoint may go now
    },
    finished(plan, result) {
      if (plan.adopt) {
        // Offers that only wanted a slot wait for the next turn, which a settle brings, and are
        // leased by id then: no search (its lane walk, candidate read and context read) for them.
        const waiting = result.failed || !result.willSettle ? [] : (result.offersWaiting ?? []);
        const kept = waiting.length > 0 && offered.length + waiting.length <= MAX_OFFERED ? waiting.length : 0;
        if (kept > 0) offered.unshift(...waiting);
        if (result.offersLeft > kept || result.failed) claimable = true;
      }
      if (plan.search && !result.failed && notified === plan.notifiedBefore) {
        claimable = result.cutShort();
        return false;
      }
      // This turn did not search, and left something to (a retry already due, an offer it could not lease).
      return !plan.search && claimable && !result.failed;
    },
    wakeForSlot(rate) {
      const at = options.now() + slotSpacingMs(rate) + 1;
      if (at >= slotAt || stopped) return;
      if (slotTimer) clearTimeout(slotTimer);
      slotAt = at;
      slotTimer = setTimeout(() => {
        slotTimer = undefined;
        slotAt = Infinity;
        raise();
        options.wake();
      }, at - options.now());
      slotTimer.unref();
    },
    stop() {
      stopped = true;
      if (slotTimer) clearTimeout(slotTimer);
      slotTimer = undefined;
      slotAt = Infinity;
    },
    start() {
      stopped = false;
    },
  };
}

/** What a searching or adopting turn asks of the transaction, given the room and caps. */
export interface TurnClaims {
  /** The half-open trials' claims (one each, in `trials`' order), then the ordinary claim. */
  claims: ClaimArgs[];
  trials: string[];
  /** The ordinary claim's limit; 0 when it had no room or was throttled (cut short either way). */
  generalLimit: number;
  offerArgs?: LeaseOfferedArgs;
}

export interface TurnClaimsInput {
  plan: TurnPlan;
  breakers: BreakerRegistry;
  /** Free slots plus lookahead, those being settled in this turn counted free. */
  room: number;
  /** The busy loop's bound: at most one host's cap per turn. */
  bound(n: number): number;
  /** The claim's base arguments: owner, lease, caps, attempts. */
  base: Omit<ClaimArgs, 'limit' | 'excludeEndpoints' | 'running'>;
  /** Held deliveries a claim could take back (LocalQueue.lapsing). */
  running(): string[];
}

/**
 * The claims of a turn: each breaker's half-open trial first (one delivery, sent at once), then the
 * ordinary claim with the room left, blocked endpoints excluded; or, adopting, the offers' lease.
 */
export function turnClaims(input: TurnClaimsInput): TurnClaims {
  const { plan, breakers, base } = input;
  let room = input.room;
  if (plan.adopt) {
    const blocked = new Set(breakers.blockedEndpoints());
    const offerArgs: LeaseOfferedArgs = { ...base, limit: input.bound(room), admits: (endpoint) => !blocked.has(endpoint), offers: plan.offers };
    return { claims: [], trials: [], generalLimit: 0, offerArgs };
  }
  if (!plan.search) return { claims: [], trials: [], generalLimit: 0 };
  const claims: ClaimArgs[] = [];
  const trials: string[] = [];
  const running = input.running();
  for (const endpoint of breakers.trialEndpoints()) {
    if (room <= 0 || !breakers.beginTrial(endpoint)) continue;
    trials.push(endpoint);
    room -= 1;
    claims.push({ ...base, running, limit: 1, excludeEndpoints: [], onlyHost: hostOfEndpoint(endpoint), onlyEndpoint: endpoint });
  }
  const limit = input.bound(room);
  if (limit > 0) claims.push({ ...base, running, limit, excludeEndpoints: breakers.blockedEndpoints() });
  return { claims, trials, generalLimit: limit < room ? 0 : limit };
}
