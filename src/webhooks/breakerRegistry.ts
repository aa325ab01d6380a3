import type { BreakerSnapshot } from '../lib/breaker.js';
import { EventEmitter } from 'node:events';
import CircuitBreaker from 'opossum';
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import {
  advanceBreaker,
  breakerFailed,
  breakerSucceeded,
  initialBreakerState,
  type BreakerPolicy,
  type BreakerState,
  type BreakerStateName,
} from './breakerState.js';
import { hostOfEndpoint } from './endpointKey.js';
import type { AttemptOutcome } from './httpClient.js';
import { newId } from '../lib/ids.js';
import { claimBreakerTrial, compareAndSetBreaker, databaseNow, loadBreaker, loadBreakers, type StoredBreaker } from './sql/breakers.js';

export type BreakerSnapshotEntry = BreakerSnapshot;

/** One endpoint's breaker as operators see it (`GET /api/breakers`). */
export interface BreakerInfo {
  /** The endpoint key (webhooks/endpointKey.ts): scheme, host, port and path. */
  endpoint: string;
  host: string;
  state: BreakerStateName;
  failures: number;
  openedAt: number | null;
  /** When the next half-open trial may go out (null unless open or half-open). */
  nextTrialAt: number | null;
}

/**
 * One breaker per webhook endpoint: scheme, host, port and path (docs/delivery.md), so customers sharing
 * a host do not stall each other. Health and metrics see them aggregated by host name.
 */
export interface BreakerRegistry {
  /**
   * Reads the breakers from the database, the authority every instance shares, unless the last read
   * is fresher than `syncMs` (a failed read is tried again by the next call).
   */
  load(): Promise<void>;
  /** Makes the next {@link load} read the database whatever its age (another instance changed a breaker). */
  invalidate(): void;
  /**
   * Moves open breakers whose reset timeout has elapsed (by the injected clock) to half-open, and
   * takes the trial lease of half-open ones no other instance holds.
   */
  refresh(): Promise<void>;
  /** Endpoints whose breaker is not closed: ordinary claims skip them, so waiting costs no attempts. */
  blockedEndpoints(): string[];
  /** Half-open endpoints whose trial lease this instance holds and whose single trial slot is free. */
  trialEndpoints(): string[];
  /** Takes the half-open trial slot of `endpoint`; false when it is taken or the endpoint is not half-open. */
  beginTrial(endpoint: string): boolean;
  /** Frees a trial slot that was taken but not used (nothing was due, or the claim was released). */
  cancelTrial(endpoint: string): void;
  /** True when an ordinary (non-trial) attempt to `endpoint` may go out now. */
  admits(endpoint: string): boolean;
  /** Runs one attempt through the endpoint's opossum breaker and records what it says about the host. */
  execute(endpoint: string, trial: boolean, attempt: () => Promise<AttemptOutcome>): Promise<AttemptOutcome>;
  /** `{host: {state, failures}}` for /api/health: a host's endpoints aggregated (the worst state, the most failures). */
  snapshot(): Record<string, BreakerSnapshotEntry>;
  /** The aggregate of one host's endpoints, as in {@link snapshot}. */
  stateOf(host: string): BreakerSnapshotEntry;
  /** Every endpoint's breaker, as of now. */
  list(): BreakerInfo[];
  /**
   * Closes breakers with zero failures (an operator's reset): the one of an endpoint key, or every
   * endpoint of a host name. Returns the endpoints reset (none for an unknown key).
   */
  reset(key: string): Promise<string[]>;
  shutdown(): void;
}

/**
 * What an attempt's outcome says about the endpoint's host (docs/delivery.md): only host-level failures
 * (connect, DNS, TLS, timeout, 5xx, 429) count against the breaker. Any other answer (a 4xx, a
 * redirect) shows the host is up and counts as a success for the breaker, while it still costs the
 * delivery its attempt. Failures that never reached the host (a refused destination, an undecryptable
 * secret) or that were this service's own (its event loop stalled) say nothing either way.
 */
export function breakerVerdict(outcome: AttemptOutcome): 'success' | 'failure' | 'neutral' {
  if (outcome.ok) return 'success';
  if (outcome.serviceFault) return 'neutral';
  const status = outcome.statusCode;
  if (status !== null) return status >= 500 || status === 429 ? 'failure' : 'success';
  return HOST_LEVEL_ERRORS.has(outcome.errorClass ?? '') ? 'failure' : 'neutral';
}

const HOST_LEVEL_ERRORS = new Set(['timeout', 'connection_refused', 'dns_error', 'tls_error', 'connection_error']);

class AttemptFailed extends Error {
  constructor(readonly outcome: AttemptOutcome) {
    super(outcome.errorMessage ?? 'attempt failed');
  }
}

type Action = (attempt: () => Promise<AttemptOutcome>) => Promise<AttemptOutcome>;

export interface BreakerRegistryDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  policy: BreakerPolicy;
  /** This instance's id in the trial lease (default: a fresh one). */
  owner?: string;
  /** How long a read of the breakers table is trusted before the next claim reads it again (default 1 s). */
  syncMs?: number;
  /** How long the half-open trial lease lasts; at least an attempt's longest run (default 60 s). */
  trialLeaseMs?: number;
  /** Runs after this instance changed a breaker's state (the service tells the other instances). */
  onChange?: () => void;
  /** A closed breaker with no failures and no attempt for this long is dropped from memory (default 10 min). */
  idleEvictMs?: number;
  /**
   * Times breakers by the database server's clock (PostgreSQL, several instances): when a breaker
   * opened, when its reset timeout ends, when a trial lease runs out — one clock for every instance,
   * whatever each machine's says. The registry's time is then its clock plus the offset to the
   * server's `clock_timestamp()`, measured again with every read of the breakers.
   */
  databaseClock?: boolean;
}

const noRow = (): StoredBreaker => ({ state: initialBreakerState, version: -1, trialOwner: null, trialUntil: null });
const sameState = (a: BreakerState, b: BreakerState) => a.state === b.state && a.failures === b.failures && a.openedAt === b.openedAt;

/**
 * The database is the authority (docs/architecture.md, SQLite and PostgreSQL): every instance on it sees the same breakers. Each state
 * change is a compare-and-set on the row's version (a lost race reloads the row and decides again on
 * what the winner wrote), the half-open trial is a lease on the row (one trial across all instances),
 * and this registry keeps a copy that is read again at most `syncMs` after the last read, so the
 * per-attempt questions (`admits`) cost no round trip. Our state machine decides (it is clock-driven);
 * opossum executes the attempts and is kept in step with `open()`/`close()`. Opossum's own tripping
 * is disabled (its rolling error percentage is not "N consecutive failures") and its wall-clock reset
 * timer is harmless because nothing is fired at a host our machine holds open.
 */
export function createBreakerRegistry(deps: BreakerRegistryDeps): BreakerRegistry {
  const entries = new Map<string, StoredBreaker>();
  const circuits = new Map<string, CircuitBreaker<Parameters<Action>, AttemptOutcome>>();
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
  // Shared and never emitted: stops every breaker from starting its own bucket-rotation interval.
  const rotation = new EventEmitter();
  rotation.setMaxListeners(0);
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
  // When each copy was last taken (a counter), so a sync drops only rows gone before it began.
  let remembered = 0;
  const rememberedAt = new Map<string, number>();

  function circuit(endpoint: string) {
    let cb = circuits.get(endpoint);
    if (!cb) {
      const action: Action = async (attempt) => {
        const outcome = await attempt();
        if (!outcome.ok) throw new AttemptFailed(outcome);
        return outcome;
      };
      cb = new CircuitBreaker(action, {
        name: endpoint,
        timeout: false,
        resetTimeout: Math.min(deps.policy.resetTimeoutMs, 2 ** 31 - 1),
        errorThresholdPercentage: 100,
        volumeThreshold: Number.MAX_SAFE_INTEGER,
        enableSnapshots: false,
        rotateBucketController: rotation,
      });
      if (get(endpoint).state === 'open') cb.open();
      circuits.set(endpoint, cb);
    }
    return cb;
  }

  /** Takes `next` as the copy of `endpoint` unless the copy is already newer; keeps opossum in step. */
  function remember(endpoint: string, next: StoredBreaker): void {
    const prev = entries.get(endpoint) ?? noRow();
    if (prev.version > next.version) return;
    entries.set(endpoint, next);
    rememberedAt.set(endpoint, ++remembered);
    if (prev.state.state !== next.state.state) {
      const cb = circuit(endpoint);
      if (next.state.state === 'open') cb.open();
      else cb.close(); // half-open: let exactly the one trial our machine admits through
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
      circuits.get(endpoint)?.shutdown();
      circuits.delete(endpoint);
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

  function aggregate(states: BreakerState[]): BreakerSnapshotEntry {
    const state = states.some((s) => s.state === 'open') ? 'open' : states.some((s) => s.state === 'half-open') ? 'half-open' : 'closed';
    return { state, failures: Math.max(0, ...states.map((s) => s.failures)) };
  }

  function byHost(): Map<string, BreakerState[]> {
    const hosts = new Map<string, BreakerState[]>();
    for (const [endpoint, s] of shown()) {
      const host = hostOfEndpoint(endpoint);
      hosts.set(host, [...(hosts.get(host) ?? []), s]);
    }
    return hosts;
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
            circuits.get(endpoint)?.shutdown();
            circuits.delete(endpoint);
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
      let outcome: AttemptOutcome;
      try {
        outcome = await circuit(endpoint).fire(attempt);
      } catch (error) {
        if (!(error instanceof AttemptFailed)) throw error;
        outcome = error.outcome;
      }
      try {
        const verdict = breakerVerdict(outcome);
        const at = now();
        // Only the trial speaks for a half-open endpoint; stragglers from before it opened do not.
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
      return Object.fromEntries([...byHost()].map(([host, entries]) => [host, aggregate(entries)]));
    },
    stateOf(host) {
      return aggregate(byHost().get(host) ?? []);
    },
    list() {
      return shown().map(([endpoint, s]) => ({
        endpoint,
        host: hostOfEndpoint(endpoint),
        state: s.state,
        failures: s.failures,
        openedAt: s.openedAt,
        nextTrialAt: s.openedAt === null ? null : s.openedAt + deps.policy.resetTimeoutMs,
      }));
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
      for (const cb of circuits.values()) cb.shutdown();
      circuits.clear();
    },
  };
  return registry;
}
