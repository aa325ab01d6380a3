import type { BreakerSnapshot } from '../../lib/breaker.js';
import CircuitBreaker from 'opossum';
import { NonRetriableError, TransientError } from '../../lib/retry.js';
import { classifyRpcError } from '../errors.js';

/** Breaker tuning; the defaults suit a public RPC endpoint. */
export interface RpcBreakerOptions {
  /** Percent of failed calls in the rolling window that opens the breaker. */
  errorThresholdPercentage?: number;
  /** Calls in the window before the breaker may open at all. */
  volumeThreshold?: number;
  resetTimeoutMs?: number;
  rollingWindowMs?: number;
}

/** Runs RPC calls behind one opossum breaker; every failure leaves classified. */
export interface RpcBreaker {
  call<T>(fn: () => Promise<T>): Promise<T>;
  state(): BreakerSnapshot;
  shutdown(): void;
}

/**
 * The RPC backend's circuit breaker. An endpoint that is down counts: 5xx, timeouts, refused or cut
 * connections. Rate limiting (429) does not: the endpoint answers, and asks for less; the pool backs
 * off for its Retry-After instead (endpoints.ts). Transaction outcomes (program errors, expired
 * blockhashes) do not count either, since they say nothing about the endpoint's health. While open,
 * calls fail fast with `TransientError('breaker_open')`; after `resetTimeoutMs` (default 5 s) one
 * trial call goes through.
 */
export function createRpcBreaker(options: RpcBreakerOptions = {}): RpcBreaker {
  const resetTimeoutMs = options.resetTimeoutMs ?? 5_000;
  let openedAt = 0;
  let lastFailure = '';
  const breaker = new CircuitBreaker(async (fn: () => Promise<unknown>) => {
    try {
      return await fn();
    } catch (error) {
      const failure = classifyRpcError(error);
      lastFailure = failure.message;
      throw failure;
    }
  }, {
    timeout: false,
    errorThresholdPercentage: options.errorThresholdPercentage ?? 50,
    volumeThreshold: options.volumeThreshold ?? 10,
    resetTimeout: resetTimeoutMs,
    rollingCountTimeout: options.rollingWindowMs ?? 10_000,
    errorFilter: (error: unknown) =>
      error instanceof NonRetriableError || (error instanceof TransientError && (error.code === 'blockhash_expired' || error.code === 'rpc_rate_limited')),
  });
  breaker.on('open', () => (openedAt = Date.now()));
  return {
    async call<T>(fn: () => Promise<T>): Promise<T> {
      try {
        return (await breaker.fire(fn)) as T;
      } catch (error) {
        if ((error as { code?: string }).code === 'EOPENBREAKER') {
          // The next try is worth making once the breaker lets a trial call through.
          const retryAfterMs = Math.max(0, openedAt + resetTimeoutMs - Date.now());
          throw new TransientError('breaker_open', `RPC circuit breaker is open; last failure: ${lastFailure || 'unknown'}`, { cause: error, retryAfterMs });
        }
        throw classifyRpcError(error);
      }
    },
    state() {
      const state = breaker.opened ? 'open' : breaker.halfOpen ? 'half-open' : 'closed';
      return { state, failures: breaker.stats.failures };
    },
    shutdown: () => breaker.shutdown(),
  };
}
