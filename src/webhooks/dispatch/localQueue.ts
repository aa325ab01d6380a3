import { performance } from 'node:perf_hooks';
import type { ClaimedDelivery } from '../sql/claimWork.js';

/** A delivery this dispatcher holds a lease on: queued, being sent, or being settled. */
export interface HeldDelivery extends ClaimedDelivery {
  /** A breaker's half-open trial: sent at once, never queued. */
  trial: boolean;
  /** When it was claimed (the lease clock): a throttled delivery's send slot. */
  claimedAt: number;
  /** Resolves when the delivery's attempt is settled, or it was given back. */
  done: Promise<void>;
  /** Lets the delivery go (LocalQueue.release) and resolves `done`. */
  finish(): void;
}

export interface LocalQueueOptions {
  maxInFlight: number;
  maxInFlightPerHost: number;
  /** Attempts of one owner sent at once, at most. */
  perOwnerCap: number;
  /** Deliveries claimed ahead beyond the free slots. */
  lookahead: number;
  /** An endpoint's cap now (endpointPace.ts). */
  capOf(endpoint: string): number;
}

/** An attempt out for less than this is expected back soon (see LocalQueue.youngOut). */
export const YOUNG_MS = 10;

/**
 * The dispatcher's local queue (docs/architecture.md, "Webhook delivery"): every delivery it holds
 * a lease on, those claimed ahead waiting for a slot in claim order, and the counters of what is
 * being sent per host and per owner. A freed slot is refilled from here without a database round
 * trip (graphile-worker's local queue); the claim keeps a host's live leases within its cap over
 * every dispatcher, and this queue keeps what is sent within the global, host and owner caps.
 */
export interface LocalQueue {
  /** Holds a claimed delivery (claimed at `claimedAt`, the lease clock); a trial is not queued (the caller sends it at once). */
  hold(row: ClaimedDelivery, trial: boolean, claimedAt: number): HeldDelivery;
  /** Lets go of a delivery that is done, unless a newer claim of it is held by now (`finish()` does this). */
  release(item: HeldDelivery): void;
  /** The next queued delivery that fits the global, host and owner caps, taken off the queue. */
  next(): HeldDelivery | undefined;
  /** Every queued delivery, taken off the queue (stop gives them back). */
  takeQueued(): HeldDelivery[];
  /** Counts an attempt being sent. */
  began(item: HeldDelivery): void;
  /** Counts an attempt back. */
  ended(item: HeldDelivery): void;
  /** Some host, endpoint or owner has as many deliveries held here as its cap allows. */
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
  const sendingByOwner = new Map<string, number>();
  /** When each attempt being sent now was started (performance.now()). */
  const sentAt = new Map<HeldDelivery, number>();

  function release(item: HeldDelivery): void {
    // A delivery given back, or settled with its retry already due, may have been claimed again
    // (by the next turn) before this item finished: that newer item stays held.
    if (held.get(item.id) === item) held.delete(item.id);
  }

  const fits = (item: HeldDelivery) => (sendingByHost.get(item.host) ?? 0) < options.maxInFlightPerHost && (sendingByOwner.get(item.ctx.owner) ?? 0) < options.perOwnerCap;

  return {
    hold(row, trial, claimedAt) {
      let resolve: () => void = () => undefined;
      const done = new Promise<void>((r) => (resolve = r));
      const item: HeldDelivery = { ...row, trial, claimedAt, done, finish: () => (release(item), resolve()) };
      held.set(item.id, item);
      if (!trial) queue.push(item);
      return item;
    },
    release,
    next() {
      if (queue.length === 0 || sending >= options.maxInFlight) return undefined;
      // The claim keeps a host's leases within its cap, so the head almost always fits; an owner
      // already sending its share waits, leaving the slot to the next owner's delivery.
      const index = queue.findIndex(fits);
      return index < 0 ? undefined : queue.splice(index, 1)[0];
    },
    takeQueued: () => queue.splice(0),
    began(item) {
      sending += 1;
      sendingByHost.set(item.host, (sendingByHost.get(item.host) ?? 0) + 1);
      sendingByOwner.set(item.ctx.owner, (sendingByOwner.get(item.ctx.owner) ?? 0) + 1);
      sentAt.set(item, performance.now());
    },
    ended(item) {
      sending -= 1;
      sentAt.delete(item);
      decrement(sendingByHost, item.host);
      decrement(sendingByOwner, item.ctx.owner);
    },
    atSomeCap() {
      const byHost = new Map<string, number>();
      const byEndpoint = new Map<string, number>();
      const byOwner = new Map<string, number>();
      for (const item of held.values()) {
        const h = (byHost.get(item.host) ?? 0) + 1;
        const e = (byEndpoint.get(item.endpoint) ?? 0) + 1;
        const o = (byOwner.get(item.ctx.owner) ?? 0) + 1;
        if (h >= options.maxInFlightPerHost || e >= options.capOf(item.endpoint) || o >= options.perOwnerCap + options.lookahead) return true;
        byHost.set(item.host, h);
        byEndpoint.set(item.endpoint, e);
        byOwner.set(item.ctx.owner, o);
      }
      return false;
    },
    heldByOwner(settling) {
      const byOwner = new Map<string, number>();
      for (const item of held.values()) {
        if (settling.has(item.id)) continue;
        byOwner.set(item.ctx.owner, (byOwner.get(item.ctx.owner) ?? 0) + 1);
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

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 1) - 1;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}
