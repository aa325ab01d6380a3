/** Failure classes shared by the launch runner and the chain backends (docs/api.md). */

/** The codes of {@link TransientError}: a typed first argument, so a swapped (message, code) does not compile. */
export type TransientCode =
  | 'account_underfunded'
  | 'blockhash_expired'
  | 'breaker_open'
  | 'chain_persist_failed'
  | 'chain_unavailable'
  | 'confirm_timeout'
  | 'internal_error'
  | 'rpc_error'
  | 'rpc_rate_limited'
  | 'rpc_timeout'
  | 'rpc_unavailable'
  | 'transaction_not_found';

/** The codes of {@link NonRetriableError} (docs/api.md, Launch lifecycle). */
export type NonRetriableCode = 'chain_capability_missing' | 'insufficient_balance' | 'internal_error' | 'invalid_configuration' | 'program_error' | 'reservation_exceeded' | 'transaction_unlandable';

/**
 * A failure worth retrying with backoff (RPC timeout, 429/5xx, blockhash expired, breaker open).
 * Every coded error takes (code, message, options), as {@link NonRetriableError} does.
 * `retryAfterMs`: the server's `Retry-After` (or the breaker's remaining open time); the next try
 * waits at least that long.
 */
export class TransientError extends Error {
  readonly retryAfterMs: number | undefined;
  constructor(
    readonly code: TransientCode,
    message: string,
    options?: { cause?: unknown; retryAfterMs?: number | undefined },
  ) {
    super(message, options);
    this.name = 'TransientError';
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/**
 * A failure that no retry can fix: the launch fails at once.
 * Codes: `invalid_configuration`, `insufficient_balance`, `program_error`, `chain_capability_missing`.
 */
export class NonRetriableError extends Error {
  constructor(
    readonly code: NonRetriableCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'NonRetriableError';
  }
}

/** Exponential backoff with a cap: attempt 1 → base, 2 → 2·base, … */
export function backoffMs(attempt: number, baseMs = 500, capMs = 30_000): number {
  return Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
}

/** Tuning of {@link jitteredBackoffMs}. */
export interface JitterOptions {
  baseMs?: number;
  capMs?: number;
  /** A server's `Retry-After`: the delay is at least this (up to `retryAfterCapMs`). */
  retryAfterMs?: number | undefined;
  /** Longest `Retry-After` honoured (default 10 min): a server cannot park work for a day. */
  retryAfterCapMs?: number;
  /** Uniform in [0, 1); injected by tests. */
  random?: () => number;
}

/**
 * The delay before the next try of something a transient fault holds up: exponential in `attempt`,
 * capped, with "equal jitter" (half fixed, half random, so many waiters never retry in step and none
 * retries at once), and never shorter than the server's `Retry-After`.
 */
export function jitteredBackoffMs(attempt: number, options: JitterOptions = {}): number {
  const ceiling = backoffMs(attempt, options.baseMs ?? 500, options.capMs ?? 30_000);
  const random = options.random ?? Math.random;
  const delay = Math.round(ceiling / 2 + random() * (ceiling / 2));
  const retryAfter = Math.min(options.retryAfterMs ?? 0, options.retryAfterCapMs ?? 10 * 60_000);
  return Math.max(delay, retryAfter);
}
