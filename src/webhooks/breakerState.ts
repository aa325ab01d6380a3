/**
 * The per-host breaker as a small, serializable state machine (docs/delivery.md), driven by the times it
 * is given rather than by timers, so it can be persisted, restored and tested with a manual clock.
 *
 * closed --N consecutive failures--> open --resetTimeout elapsed--> half-open
 * half-open --trial succeeds--> closed;  half-open --trial fails--> open (for another resetTimeout)
 */
import type { BreakerStateName } from '../lib/breaker.js';

export type { BreakerStateName };

export interface BreakerState {
  state: BreakerStateName;
  /** Consecutive failures (reset by any success while closed or by the half-open trial). */
  failures: number;
  /** When the breaker last opened (ms); null unless open or half-open. */
  openedAt: number | null;
}

export interface BreakerPolicy {
  failureThreshold: number;
  resetTimeoutMs: number;
}

export const initialBreakerState: BreakerState = { state: 'closed', failures: 0, openedAt: null };

/** Open → half-open once the reset timeout has elapsed; any other state is returned unchanged. */
export function advanceBreaker(s: BreakerState, now: number, policy: BreakerPolicy): BreakerState {
  if (s.state === 'open' && s.openedAt !== null && now - s.openedAt >= policy.resetTimeoutMs) {
    return { ...s, state: 'half-open' };
  }
  return s;
}

/** A delivery to the host succeeded. Results arriving while open (from calls started before) are ignored. */
export function breakerSucceeded(s: BreakerState): BreakerState {
  if (s.state === 'open') return s;
  return initialBreakerState;
}

/** A delivery to the host failed. */
export function breakerFailed(s: BreakerState, now: number, policy: BreakerPolicy): BreakerState {
  if (s.state === 'open') return s;
  const failures = s.failures + 1;
  if (s.state === 'half-open' || failures >= policy.failureThreshold) return { state: 'open', failures, openedAt: now };
  return { state: 'closed', failures, openedAt: null };
}
