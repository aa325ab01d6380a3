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
import type { AttemptOutcome } from './httpClient.js';
import { loadBreakerStates, saveBreakerState } from './sql/breakers.js';

export interface BreakerSnapshotEntry {
  state: BreakerStateName;
  failures: number;
}

/** One breaker per endpoint host (SPEC §4.4). */
export interface BreakerRegistry {
  /** Restores persisted breakers (once it succeeds; a failed load is tried again by the next call). */
  load(): Promise<void>;
  /** Moves open breakers whose reset timeout has elapsed (by the injected clock) to half-open. */
  refresh(): Promise<void>;
  /** Hosts whose breaker is not closed: ordinary claims skip them, so waiting costs no attempts. */
  blockedHosts(): string[];
  /** Half-open hosts whose single trial slot is free. */
  trialHosts(): string[];
  /** Takes the half-open trial slot of `host`; false when it is taken or the host is not half-open. */
  beginTrial(host: string): boolean;
  /** Frees a trial slot that was taken but not used (nothing was due, or the claim was released). */
  cancelTrial(host: string): void;
  /** True when an ordinary (non-trial) attempt to `host` may go out now. */
  admits(host: string): boolean;
  /** Runs one attempt through the host's opossum breaker and records its outcome. */
  execute(host: string, trial: boolean, attempt: () => Promise<AttemptOutcome>): Promise<AttemptOutcome>;
  /** `{host: {state, failures}}` for /api/health. */
  snapshot(): Record<string, BreakerSnapshotEntry>;
  stateOf(host: string): BreakerSnapshotEntry;
  /** Closes a host's breaker with zero failures (an operator's reset); false for an unknown host. */
  reset(host: string): Promise<boolean>;
  shutdown(): void;
}

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

  const get = (host: string) => states.get(host) ?? initialBreakerState;

  function circuit(host: string) {
    let cb = circuits.get(host);
    if (!cb) {
      const action: Action = async (attempt) => {
        const outcome = await attempt();
        if (!outcome.ok) throw new AttemptFailed(outcome);
        return outcome;
      };
      cb = new CircuitBreaker(action, {
        name: host,
        timeout: false,
        resetTimeout: Math.min(deps.policy.resetTimeoutMs, 2 ** 31 - 1),
        errorThresholdPercentage: 100,
        volumeThreshold: Number.MAX_SAFE_INTEGER,
        enableSnapshots: false,
        rotateBucketController: rotation,
      });
      if (get(host).state === 'open') cb.open();
      circuits.set(host, cb);
    }
    return cb;
  }

  async function transition(host: string, next: BreakerState): Promise<void> {
    const prev = get(host);
    if (prev.state === next.state && prev.failures === next.failures && prev.openedAt === next.openedAt) return;
    states.set(host, next);
    if (prev.state !== next.state) {
      const cb = circuit(host);
      if (next.state === 'open') cb.open();
      else cb.close(); // half-open: let exactly the one trial our machine admits through
      log.info({ host, from: prev.state, to: next.state, failures: next.failures }, 'breaker state changed');
    }
    await saveBreakerState(deps.db, host, next, deps.clock.now());
  }

  const registry: BreakerRegistry = {
    load() {
      loading ??= loadBreakerStates(deps.db).then(
        (saved) => {
          for (const [host, s] of saved) if (!states.has(host)) states.set(host, s);
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
      for (const [host, s] of [...states]) await transition(host, advanceBreaker(s, now, deps.policy));
    },
    blockedHosts() {
      return [...states].filter(([, s]) => s.state !== 'closed').map(([host]) => host);
    },
    trialHosts() {
      return [...states].filter(([host, s]) => s.state === 'half-open' && !trials.has(host)).map(([host]) => host);
    },
    beginTrial(host) {
      if (get(host).state !== 'half-open' || trials.has(host)) return false;
      trials.add(host);
      return true;
    },
    cancelTrial(host) {
      trials.delete(host);
    },
    admits(host) {
      return get(host).state === 'closed';
    },
    async execute(host, trial, attempt) {
      let outcome: AttemptOutcome;
      try {
        outcome = await circuit(host).fire(attempt);
      } catch (error) {
        if (!(error instanceof AttemptFailed)) throw error;
        outcome = error.outcome;
      }
      try {
        const current = get(host);
        // Only the trial speaks for a half-open host; stragglers from before it opened do not.
        // A failure of our own (the service's loop stalled) says nothing about the receiver.
        if ((current.state !== 'half-open' || trial) && !(!outcome.ok && outcome.serviceFault)) {
          const next = outcome.ok ? breakerSucceeded(current) : breakerFailed(current, deps.clock.now(), deps.policy);
          await transition(host, next);
        }
      } finally {
        if (trial) trials.delete(host);
      }
      return outcome;
    },
    snapshot() {
      // Shown as of now: an open breaker whose time is up reads half-open even before the next tick.
      const now = deps.clock.now();
      return Object.fromEntries(
        [...states].map(([host, s]) => {
          const shown = advanceBreaker(s, now, deps.policy);
          return [host, { state: shown.state, failures: shown.failures }];
        }),
      );
    },
    stateOf(host) {
      const s = advanceBreaker(get(host), deps.clock.now(), deps.policy);
      return { state: s.state, failures: s.failures };
    },
    async reset(host) {
      await registry.load();
      if (!states.has(host)) return false;
      trials.delete(host);
      await transition(host, initialBreakerState);
      log.info({ host }, 'breaker reset by an operator');
      return true;
    },
    shutdown() {
      for (const cb of circuits.values()) cb.shutdown();
      circuits.clear();
    },
  };
  return registry;
}
