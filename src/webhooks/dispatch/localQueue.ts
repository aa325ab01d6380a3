import { performance } from 'node:perf_hooks';
import type { ClaimedDelivery } from '../sql/claimWork.js';
import { Held, type HeldDelivery } from './heldDelivery.js';
export type { HeldDelivery } from './heldDelivery.js';
import { createSendAllowances, type SendAllowance } from './sendAllowance.js';

export interface LocalQueueOptions {
  maxInFlight: number;
  maxInFlightPerHost: number;
  /** Attempts of one owner sent at once, at most. */
  perOwnerCap: number;
  /** Deliveries claimed ahead beyond the free slots. */
  lookahead: number;
  /** Deliveries per host leased beyond its cap (ClaimArgs.prefetch). */
  prefetch: number;
  /** An endpoint's cap now (endpointPace.ts). */
  capOf(endpoint: string): number;
}

/** An attempt out for less than this is expected back soon (see LocalQueue.youngOut). */
export const YOUNG_MS = 10;

/**
 * The dispatcher's local queue (docs/architecture.md, "Webhook delivery"): every delivery it holds
 * a lease on, those claimed ahead waiting for a slot in claim order, and the counters of what is
 * being sent per host and per owner. A freed slot is refilled from here without a database round
 * trip (graphile-worker's local queue). The claim keeps a host's live leases over every dispatcher
 * within its cap plus the prefetch, and reports what this dispatcher may send there at once
 * (dispatch/sendAllowance.ts); this queue keeps what is sent within the global and owner caps and
 * each host's and endpoint's allowance.
 */
export interface LocalQueue {
  /** Holds a claimed delivery (claimed at `claimedAt`, the lease clock), queued last; a trial first. */
  hold(row: ClaimedDelivery, trial: boolean, claimedAt: number): HeldDelivery;
  /** Takes a send allowance a claim reported (hold what it claimed after). */
  allow(allowance: SendAllowance): void;
  /** Lets go of a delivery that is done, unless a newer claim of it is held by now (`finish()` does this). */
  release(item: HeldDelivery): void;
  /** The next queued delivery that fits the global and owner caps and its host's and endpoint's allowance, taken off the queue. */
  next(): HeldDelivery | undefined;
  /** Every queued delivery, taken off the queue (stop gives them back). */
  takeQueued(): HeldDelivery[];
  /** Counts an attempt being sent. */
  began(item: HeldDelivery): void;
  /** Counts an attempt back. */
  ended(item: HeldDelivery): void;
  /** Some host, endpoint or owner has as many deliveries held here as its lease room allows (cap plus prefetch). */
  atSomeCap(): boolean;
  /** Held deliveries per owner, those in `settling` left out (their slots are free once the turn commits). */
  heldByOwner(settling: ReadonlySet<string>): Map<string, number>;
  /** Held deliveries whose lease has run out or will within half a lease (a claim could take them back). */
  lapsing(now: number, leaseMs: number): string[];
  /** Some attempt sent less than {@link YOUNG_MS} ago is still out. */
  youngOut(): boolean;
  /** Resolves true once every held delivery is done, false when `ms` passed first. */
  settledWithin(ms: number): Promise<boolean>;
  held(): number;
  heldItems(): HeldDelivery[];
  sending(): number;
  queued(): number;
}

export function createLocalQueue(options: LocalQueueOptions): LocalQueue {
  const held = new Map<string, HeldDelivery>();
  /** Claimed, not yet sent, in claim order. */
  const queue: HeldDelivery[] = [];
  let sending = 0;
  const sendingByHost = new Map<string, number>();
  const sendingByEndpoint = new Map<string, number>();
  const sendingByOwner = new Map<string, number>();
  const heldByHost = new Map<string, number>();
  const heldByEndpoint = new Map<string, number>();
  const heldByOwner = new Map<string, number>();
  const allowances = createSendAllowances();
  /** When each attempt being sent now was started (performance.now()). */
  const sentAt = new Map<HeldDelivery, number>();

  function release(item: HeldDelivery): void {
    // A delivery given back, or settled with its retry already due, may have been claimed again
    // (by the next turn) before this item finished: that newer item stays held.
    if (held.get(item.id) !== item) return;
    held.delete(item.id);
    const [host, endpoint] = uncount(item);
    if (host === 0) allowances.forgetHost(item.host);
    if (endpoint === 0) allowances.forgetEndpoint(item.endpoint);
  }

  /** Takes a held item out of the host, endpoint and owner counts; what is left of the first two. */
  function uncount(item: HeldDelivery): [number, number] {
    decrement(heldByOwner, item.ctx.owner);
    return [decrement(heldByHost, item.host), decrement(heldByEndpoint, item.endpoint)];
  }

  const fits = (item: HeldDelivery) =>
    (sendingByHost.get(item.host) ?? 0) < allowances.host(item.host, options.maxInFlightPerHost) &&
    (sendingByEndpoint.get(item.endpoint) ?? 0) < allowances.endpoint(item.endpoint, options.capOf(item.endpoint)) &&
    (sendingByOwner.get(item.ctx.owner) ?? 0) < options.perOwnerCap;
  const endpointRoom = (endpoint: string) => {
    const cap = options.capOf(endpoint);
    return cap + Math.min(options.prefetch, cap);
  };

  return {
    hold(row, trial, claimedAt) {
      const item = new Held(row, trial, claimedAt, release);
      // A newer claim of a delivery still held replaces it (the older item's finish() then leaves it).
      const before = held.get(item.id);
      if (before) uncount(before);
      held.set(item.id, item);
      heldByHost.set(item.host, (heldByHost.get(item.host) ?? 0) + 1);
      heldByEndpoint.set(item.endpoint, (heldByEndpoint.get(item.endpoint) ?? 0) + 1);
      heldByOwner.set(item.ctx.owner, (heldByOwner.get(item.ctx.owner) ?? 0) + 1);
      if (trial) queue.unshift(item);
      else queue.push(item);
      return item;
    },
    allow: (allowance) => allowances.note(allowance),
    release,
    next() {
      if (queue.length === 0 || sending >= options.maxInFlight) return undefined;
      // A delivery whose host or endpoint is at its allowance, or whose owner is sending its share,
      // waits, leaving the slot to the next one that fits.
      const index = queue.findIndex(fits);
      return index < 0 ? undefined : queue.splice(index, 1)[0];
    },
    takeQueued: () => queue.splice(0),
    began(item) {
      sending += 1;
      sendingByHost.set(item.host, (sendingByHost.get(item.host) ?? 0) + 1);
      sendingByEndpoint.set(item.endpoint, (sendingByEndpoint.get(item.endpoint) ?? 0) + 1);
      sendingByOwner.set(item.ctx.owner, (sendingByOwner.get(item.ctx.owner) ?? 0) + 1);
      sentAt.set(item, performance.now());
    },
    ended(item) {
      sending -= 1;
      sentAt.delete(item);
      decrement(sendingByHost, item.host);
      decrement(sendingByEndpoint, item.endpoint);
      decrement(sendingByOwner, item.ctx.owner);
    },
    atSomeCap() {
      for (const n of heldByHost.values()) if (n >= options.maxInFlightPerHost + options.prefetch) return true;
      for (const [endpoint, n] of heldByEndpoint) if (n >= endpointRoom(endpoint)) return true;
      for (const n of heldByOwner.values()) if (n >= options.perOwnerCap + options.lookahead) return true;
      return false;
    },
    heldByOwner(settling) {
      const byOwner = new Map(heldByOwner);
      for (const id of settling) {
        const item = held.get(id);
        if (item) decrement(byOwner, item.ctx.owner);
      }
      return byOwner;
    },
    // A claim skips every other held delivery by its live lease already, so it need not list them:
    // a `not in (…)` of every held id cost the claim 20-27 us per row on SQLite.
    lapsing(now, leaseMs) {
      const soon = now + leaseMs / 2;
      const ids: string[] = [];
      for (const item of held.values()) if (item.leaseExpiresAt <= soon) ids.push(item.id);
      return ids;
    },
    youngOut() {
      const since = performance.now() - YOUNG_MS;
      for (const at of sentAt.values()) if (at > since) return true;
      return false;
    },
    async settledWithin(ms) {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
      const all = (async () => {
        while (held.size > 0) await Promise.all([...held.values()].map((item) => item.done));
        return true;
      })();
      try {
        return await Promise.race([all, bound]);
      } finally {
        clearTimeout(timer);
      }
    },
    held: () => held.size,
    heldItems: () => [...held.values()],
    sending: () => sending,
    queued: () => queue.length,
  };
}

function decrement(counts: Map<string, number>, key: string): number {
  const n = (counts.get(key) ?? 1) - 1;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
  return Math.max(n, 0);
}
