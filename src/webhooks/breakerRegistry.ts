import { newId } from '../lib/ids.js';
import type { BreakerRegistry, BreakerRegistryDeps } from './breakerContract.js';
import { createBreakerCircuits } from './breakerCircuits.js';
import { advanceBreaker, breakerFailed, breakerSucceeded, initialBreakerState, type BreakerState } from './breakerState.js';
import { breakerVerdict } from './breakerVerdict.js';
import { breakerList, hostSnapshot, hostState } from './breakerViews.js';
import { hostOfEndpoint } from './endpointKey.js';
import { claimBreakerTrial, compareAndSetBreaker, databaseNow, loadBreaker, loadBreakers, type StoredBreaker } from './sql/breakers.js';

export type { BreakerRegistry, BreakerRegistryDeps, BreakerSnapshotEntry } from './breakerContract.js';
export type { BreakerInfo } from './breakerViews.js';

const noRow = (): StoredBreaker => ({ state: initialBreakerState, version: -1, trialOwner: null, trialUntil: null });
const sameState = (a: BreakerState, b: BreakerState) => a.state === b.state && a.failures === b.failures && a.openedAt === b.openedAt;

/**
 * The database is the authority (docs/architecture.md, SQLite and PostgreSQL): every instance on it sees the same breakers. Each state
 * change is a compare-and-set on the row's version (a lost race reloads the row and decides again on
 * what the winner wrote), the half-open trial is a lease on the row (one trial across all instances),
 * and this registry keeps a copy that is read again at most `syncMs` after the last read, so the
 * per-attempt questions (`admits`) cost no round trip. Our state machine decides (breakerState.ts,
 * clock-driven); opossum executes the attempts (breakerCircuits.ts), kept in step with it. An
 * attempt's outcome speaks for its host as breakerVerdict.ts says; what operators see is breakerViews.ts.
 */
export function createBreakerRegistry(deps: BreakerRegistryDeps): BreakerRegistry {
  const entries = new Map<string, StoredBreaker>();
  /** Trial slots in use by this instance (it holds their endpoint's lease). */
  const trials = new Set<string>();
  const owner = deps.owner ?? newId('brk', 8);
  const syncMs = deps.syncMs ?? 1000;
  const trialLeaseMs = deps.trialLeaseMs ?? 60_000;
  // A closed breaker with no failures reads the same as one never seen (`get` falls back to closed),
  // so such entries are dropped once idle and not read back in: memory holds the endpoints that
  // matter (open, half-open, failing) and the ones in use, not every endpoint ever attempted.
  const idleEvictMs = deps.idleEvictMs ?? 10 * 60_000;
  const lastUsed = new Map<string, number>();
  let nextSweepAt = -Infinity;
  let loaded = false;
  let stale = false;
  let lastSync = 0;
  let syncing: Promise<void> | undefined;
  const log = deps.logger.child({ component: 'webhook-breakers' });
  /** The database clock minus this registry's clock (0 until measured, or without `databaseClock`). */
  let offset = 0;
  /** The breakers' time: the database server's on PostgreSQL (`databaseClock`), else the injected clock. */
  const now = () => deps.clock.now() + offset;
  async function measureOffset(): Promise<void> {
    const before = deps.clock.now();
    const server = await databaseNow(deps.db);
    const after = deps.clock.now();
    offset = server - Math.round((before + after) / 2);
  }

  const get = (endpoint: string) => entries.get(endpoint)?.state ?? initialBreakerState;
  const circuits = createBreakerCircuits(deps.policy.resetTimeoutMs, (endpoint) => get(endpoint).state === 'open');
  // When each copy was last taken (a counter), so a sync drops only rows gone before it began.
  let remembered = 0;
  const rememberedAt = new Map<string, number>();

  /** Takes `next` as the copy of `endpoint` unless the copy is already newer; keeps opossum in step. */
  function remember(endpoint: string, next: StoredBreaker): void {
    const prev = entries.get(endpoint) ?? noRow();
    if (prev.version > next.version) return;
    entries.set(endpoint, next);
    rememberedAt.set(endpoint, ++remembered);
    if (prev.state.state !== next.state.state) {
      circuits.setOpen(endpoint, next.state.state === 'open'); // half-open: let exactly the one trial our machine admits through
      log.info({ endpoint, from: prev.state.state, to: next.state.state, failures: next.state.failures }, 'breaker state changed');
    }
  }

  /**
   * Applies `change` to the stored state by compare-and-set: on a lost race the row is read again
   * and `change` decides on what the other instance wrote.
   */
  async function apply(endpoint: string, change: (s: BreakerState) => BreakerState): Promise<void> {
    for (let round = 0; round < 8; round++) {
      const current = entries.get(endpoint) ?? noRow();
      const next = change(current.state);
      if (sameState(current.state, next)) return;
      const version = await compareAndSetBreaker(deps.db, { endpoint, host: hostOfEndpoint(endpoint), version: current.version, next, now: now() });
      if (version !== undefined) {
        remember(endpoint, { state: next, version, trialOwner: null, trialUntil: null });
        if (next.state !== current.state.state) deps.onChange?.();
        return;
      }
      const fresh = await loadBreaker(deps.db, endpoint);
      if (fresh) remember(endpoint, fresh);
    }
    log.warn({ endpoint }, 'breaker update lost the race eight times; the next outcome tries again');
  }

  /** Drops idle, closed, failure-free endpoints (looked at most once a minute). */
  function sweep(now: number): void {
    if (now < nextSweepAt) return;
    nextSweepAt = now + Math.min(idleEvictMs, 60_000);
    for (const [endpoint, e] of entries) {
      if (e.state.state !== 'closed' || e.state.failures > 0 || trials.has(endpoint)) continue;
      if (now - (lastUsed.get(endpoint) ?? -Infinity) < idleEvictMs) continue;
      entries.delete(endpoint);
      rememberedAt.delete(endpoint);
      circuits.drop(endpoint);
      lastUsed.delete(endpoint);
    }
    for (const endpoint of lastUsed.keys()) if (!entries.has(endpoint) && now - lastUsed.get(endpoint)! >= idleEvictMs) lastUsed.delete(endpoint);
  }

  /** True when this instance holds the trial lease of `e` with at least half of it left. */
  function holdsTrial(e: StoredBreaker, now: number): boolean {
    return e.state.state === 'half-open' && e.trialOwner === owner && e.trialUntil !== null && e.trialUntil - now >= trialLeaseMs / 2;
  }

  /** Claims or renews the trial lease of a half-open endpoint when no other instance holds a live one. */
  async function leaseTrial(endpoint: string, now: number): Promise<void> {
    const e = entries.get(endpoint);
    if (!e || e.state.state !== 'half-open' || trials.has(endpoint) || holdsTrial(e, now)) return;
    if (e.trialOwner !== null && e.trialOwner !== owner && e.trialUntil !== null && e.trialUntil > now) return;
    const until = now + trialLeaseMs;
    if (await claimBreakerTrial(deps.db, { endpoint, version: e.version, owner, now, until })) {
      entries.set(endpoint, { ...e, trialOwner: owner, trialUntil: until });
    } else {
      const fresh = await loadBreaker(deps.db, endpoint);
      if (fresh) remember(endpoint, fresh);
    }
  }

  /** Every endpoint's state as of now: an open breaker whose time is up reads half-open even before the next tick. */
  function shown(): Array<[string, BreakerState]> {
    const at = now();
    return [...entries].map(([endpoint, e]) => [endpoint, advanceBreaker(e.state, at, deps.policy)]);
  }

  const registry: BreakerRegistry = {
    load() {
      if (loaded && !stale && deps.clock.now() - lastSync < syncMs) return Promise.resolve();
      const readFrom = remembered;
      syncing ??= Promise.all([loadBreakers(deps.db), deps.databaseClock ? measureOffset() : undefined])
        .then(([rows]) => {
          for (const [endpoint, row] of rows) {
            // A closed, failure-free breaker we do not hold says nothing a missing one does not.
            if (!entries.has(endpoint) && row.state.state === 'closed' && row.state.failures === 0) continue;
            remember(endpoint, row);
          }
          // A row that is gone (its endpoint was deleted) is no breaker any more: not listed, not
          // holding anything back. A copy taken after this read began may be a row it missed: kept.
          for (const endpoint of [...entries.keys()]) {
            if (rows.has(endpoint) || trials.has(endpoint) || (rememberedAt.get(endpoint) ?? 0) > readFrom) continue;
            entries.delete(endpoint);
            rememberedAt.delete(endpoint);
            circuits.drop(endpoint);
          }
          loaded = true;
          stale = false;
          lastSync = deps.clock.now();
        })
        // A failed read is not cached: the next claim tries again instead of delivering nothing until a restart.
        .finally(() => (syncing = undefined));
      return syncing;
    },
    invalidate() {
      stale = true;
    },
    async refresh() {
      const at = now();
      for (const endpoint of [...entries.keys()]) {
        await apply(endpoint, (s) => advanceBreaker(s, at, deps.policy));
        await leaseTrial(endpoint, at);
      }
      sweep(at);
    },
    blockedEndpoints() {
      return [...entries].filter(([, e]) => e.state.state !== 'closed').map(([endpoint]) => endpoint);
    },
    trialEndpoints() {
      const at = now();
      return [...entries].filter(([endpoint, e]) => holdsTrial(e, at) && !trials.has(endpoint)).map(([endpoint]) => endpoint);
    },
    beginTrial(endpoint) {
      const e = entries.get(endpoint);
      if (!e || !holdsTrial(e, now()) || trials.has(endpoint)) return false;
      trials.add(endpoint);
      return true;
    },
    cancelTrial(endpoint) {
      // The lease stays with this instance until it runs out: nothing was due here, so nothing is due elsewhere.
      trials.delete(endpoint);
    },
    admits(endpoint) {
      return get(endpoint).state === 'closed';
    },
    async execute(endpoint, trial, attempt) {
      lastUsed.set(endpoint, now());
      const outcome = await circuits.fire(endpoint, attempt);
      try {
        const verdict = breakerVerdict(outcome);
        const at = now();
        // Only the trial speaks for a half-open endpoint; stragglers from before it opened do not.
        // A success at a closed breaker without failures changes nothing (most attempts): no update to try.
        if (verdict === 'success' && sameState(get(endpoint), initialBreakerState)) return outcome;
        if (verdict !== 'neutral') {
          await apply(endpoint, (s) =>
            s.state === 'half-open' && !trial ? s : verdict === 'success' ? breakerSucceeded(s) : breakerFailed(s, at, deps.policy),
          );
        }
      } finally {
        if (trial) trials.delete(endpoint);
      }
      return outcome;
    },
    snapshot() {
      return hostSnapshot(shown());
    },
    stateOf(host) {
      return hostState(shown(), host);
    },
    list() {
      return breakerList(shown(), deps.policy);
    },
    async reset(key) {
      stale = true; // an operator acts on what the database says now
      await registry.load();
      const endpoints = entries.has(key) ? [key] : [...entries.keys()].filter((endpoint) => hostOfEndpoint(endpoint) === key);
      for (const endpoint of endpoints) {
        trials.delete(endpoint);
        await apply(endpoint, () => initialBreakerState);
        log.info({ endpoint }, 'breaker reset by an operator');
      }
      return endpoints;
    },
    shutdown() {
      circuits.shutdown();
    },
  };
  return registry;
}
