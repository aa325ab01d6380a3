/** The states of every circuit breaker in the service (webhook endpoints, the RPC backend). */
export type BreakerStateName = 'closed' | 'open' | 'half-open';

/** A breaker as health, metrics and the API show it: its state and its consecutive failures. */
export interface BreakerSnapshot {
  state: BreakerStateName;
  failures: number;
}
