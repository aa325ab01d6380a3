import { EventEmitter } from 'node:events';
import CircuitBreaker from 'opossum';
import type { AttemptOutcome } from './httpClient.js';

type Action = (attempt: () => Promise<AttemptOutcome>) => Promise<AttemptOutcome>;

class AttemptFailed extends Error {
  constructor(readonly outcome: AttemptOutcome) {
    super(outcome.errorMessage ?? 'attempt failed');
  }
}

/**
 * The opossum breakers that run the attempts, one per endpoint, made on first use (a closed one
 * lets the attempt run without going through opossum's call path). They only execute: the registry's state machine decides (breakerState.ts) and keeps them in step with
 * `setOpen`. Opossum's own tripping is disabled (its rolling error percentage is not "N consecutive
 * failures"), and its wall-clock reset timer is harmless because nothing is fired at a host the
 * registry holds open.
 */
export interface BreakerCircuits {
  /** Runs one attempt through the endpoint's breaker; a failed outcome comes back as the outcome, not thrown. */
  fire(endpoint: string, attempt: () => Promise<AttemptOutcome>): Promise<AttemptOutcome>;
  /** Opens or closes the endpoint's breaker (half-open is closed here: the registry admits the one trial). */
  setOpen(endpoint: string, open: boolean): void;
  /** Forgets the endpoint's breaker (evicted or gone). */
  drop(endpoint: string): void;
  shutdown(): void;
}

/** `isOpen` tells a breaker made on first use whether to start open. */
export function createBreakerCircuits(resetTimeoutMs: number, isOpen: (endpoint: string) => boolean): BreakerCircuits {
  const circuits = new Map<string, CircuitBreaker<Parameters<Action>, AttemptOutcome>>();
  // Shared and never emitted: stops every breaker from starting its own bucket-rotation interval.
  const rotation = new EventEmitter();
  rotation.setMaxListeners(0);

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
        resetTimeout: Math.min(resetTimeoutMs, 2 ** 31 - 1),
        errorThresholdPercentage: 100,
        volumeThreshold: Number.MAX_SAFE_INTEGER,
        enableSnapshots: false,
        rotateBucketController: rotation,
      });
      if (isOpen(endpoint)) cb.open();
      circuits.set(endpoint, cb);
    }
    return cb;
  }

  return {
    async fire(endpoint, attempt) {
      const cb = circuit(endpoint);
      // Closed (almost every attempt), opossum would only call the action, after its per-call
      // bookkeeping (events, rolling counts, a semaphore) that nothing here reads: about 2 % of the
      // dispatcher's CPU. Open or half-open, it decides as before.
      if (cb.closed) return attempt();
      try {
        return await cb.fire(attempt);
      } catch (error) {
        if (!(error instanceof AttemptFailed)) throw error;
        return error.outcome;
      }
    },
    setOpen(endpoint, open) {
      const cb = circuit(endpoint);
      if (open) cb.open();
      else cb.close();
    },
    drop(endpoint) {
      circuits.get(endpoint)?.shutdown();
      circuits.delete(endpoint);
    },
    shutdown() {
      for (const cb of circuits.values()) cb.shutdown();
      circuits.clear();
    },
  };
}
