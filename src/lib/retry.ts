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
export type NonRetriableCode = 'chain_capability_missing' | 'insufficient_balance' | 'internal_error' | 'invalid_configuration' | 'program_error';

/**
 * A failure worth retrying with backoff (RPC timeout, 429/5xx, blockhash expired, breaker open).
 * Every coded error takes (code, message, options), as {@link NonRetriableError} does.
 */
export class TransientError extends Error {
  constructor(
    readonly code: TransientCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TransientError';
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
