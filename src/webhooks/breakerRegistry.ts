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
import { loadBreakerStates, saveBreakerState } from './sql/breakers.js';

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
  /** Restores persisted breakers (once it succeeds; a failed load is tried again by the next call). */
  load(): Promise<void>;
  /** Moves open breakers whose reset timeout has elapsed (by the injected clock) to half-open. */
  refresh(): Promise<void>;
  /** Endpoints whose breaker is not closed: ordinary claims skip them, so waiting costs no attempts. */
  blockedEndpoints(): string[];
  /** Half-open endpoints whose single trial slot is free. */
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

/**
 * Our state machine is the authority (it is clock-driven and persisted on every change); opossum
 * executes the attempts and is kept in step with `open()`/`close()`. Opossum's own tripping is
 * disabled (its rolling error percentage is not "N consecutive failures") and its wall-clock reset
 * timer is harmless because nothing is fired at a host our machine holds open.
 */
export function createBreakerRegistry(deps: { db: Db; clock: Clock; logger: Logger; policy: BreakerPolicy }): BreakerRegistry {
  const states = new Map<string, BreakerState>();
  const circuits = new Map<string, CircuitBreaker<Parameters<Action>, AttemptOutcome>>();
  const trials = new Set<string>();
  let loading: Promise<void> | undefined;
  // Shared and never emitted: stops every breaker from starting its own bucket-rotation interval.
  const rotation = new EventEmitter();
  rotation.setMaxListeners(0);
  const log = deps.logger.child({ component: 'webhook-breakers' });

  const get = (endpoint: string) => states.get(endpoint) ?? initialBreakerState;

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

  async function transition(endpoint: string, next: BreakerState): Promise<void> {
    const prev = get(endpoint);
    if (prev.state === next.state && prev.failures === next.failures && prev.openedAt === next.openedAt) return;
    states.set(endpoint, next);
    if (prev.state !== next.state) {
      const cb = circuit(endpoint);
      if (next.state === 'open') cb.open();
      else cb.close(); // half-open: let exactly the one trial our machine admits through
      log.info({ endpoint, from: prev.state, to: next.state, failures: next.failures }, 'breaker state changed');
    }
    await saveBreakerState(deps.db, endpoint, hostOfEndpoint(endpoint), next, deps.clock.now());
  }

  /** Every endpoint's state as of now: an open breaker whose time is up reads half-open even before the next tick. */
  function shown(): Array<[string, BreakerState]> {
    const now = deps.clock.now();
    return [...states].map(([endpoint, s]) => [endpoint, advanceBreaker(s, now, deps.policy)]);
  }

  function aggregate(entries: BreakerState[]): BreakerSnapshotEntry {
    const state = entries.some((s) => s.state === 'open') ? 'open' : entries.some((s) => s.state === 'half-open') ? 'half-open' : 'closed';
    return { state, failures: Math.max(0, ...entries.map((s) => s.failures)) };
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
      loading ??= loadBreakerStates(deps.db).then(
        (saved) => {
          for (const [endpoint, s] of saved) if (!states.has(endpoint)) states.set(endpoint, s);
        },
        (error: unknown) => {
          // Not cached: the next claim tries again instead of delivering nothing until a restart.
          loading = undefined;
          throw error;
        },
      );
      return loading;
    },
    async refresh() {
      const now = deps.clock.now();
      for (const [endpoint, s] of [...states]) await transition(endpoint, advanceBreaker(s, now, deps.policy));
    },
    blockedEndpoints() {
      return [...states].filter(([, s]) => s.state !== 'closed').map(([endpoint]) => endpoint);
    },
    trialEndpoints() {
      return [...states].filter(([endpoint, s]) => s.state === 'half-open' && !trials.has(endpoint)).map(([endpoint]) => endpoint);
    },
    beginTrial(endpoint) {
      if (get(endpoint).state !== 'half-open' || trials.has(endpoint)) return false;
      trials.add(endpoint);
      return true;
    },
    cancelTrial(endpoint) {
      trials.delete(endpoint);
    },
    admits(endpoint) {
      return get(endpoint).state === 'closed';
    },
    async execute(endpoint, trial, attempt) {
      let outcome: AttemptOutcome;
      try {
        outcome = await circuit(endpoint).fire(attempt);
      } catch (error) {
        if (!(error instanceof AttemptFailed)) throw error;
        outcome = error.outcome;
      }
      try {
        const current = get(endpoint);
        const verdict = breakerVerdict(outcome);
        // Only the trial speaks for a half-open endpoint; stragglers from before it opened do not.
        if ((current.state !== 'half-open' || trial) && verdict !== 'neutral') {
          const next = verdict === 'success' ? breakerSucceeded(current) : breakerFailed(current, deps.clock.now(), deps.policy);
          await transition(endpoint, next);
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
      await registry.load();
      const endpoints = states.has(key) ? [key] : [...states.keys()].filter((endpoint) => hostOfEndpoint(endpoint) === key);
      for (const endpoint of endpoints) {
        trials.delete(endpoint);
        await transition(endpoint, initialBreakerState);
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
