/** Failure classes shared by the launch runner and the chain backends (docs/api.md). */

/** A failure worth retrying with backoff (RPC timeout, 429/5xx, blockhash expired, breaker open). */
export class TransientError extends Error {
  constructor(
    readonly code: string,
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
    readonly code: string,
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
