import { NonRetriableError, TransientError } from '../lib/retry.js';

export interface ClassifiedFailure {
  retriable: boolean;
  code: string;
  message: string;
  /** The server's `Retry-After` (or the breaker's remaining open time), when known. */
  retryAfterMs?: number | undefined;
}

/** Sorts a step failure into the classes of docs/api.md; unknown errors count as transient. */
export function classifyFailure(error: unknown): ClassifiedFailure {
  if (error instanceof NonRetriableError) return { retriable: false, code: error.code, message: error.message };
  if (error instanceof TransientError) return { retriable: true, code: error.code, message: error.message, retryAfterMs: error.retryAfterMs };
  const message = error instanceof Error ? error.message : String(error);
  return { retriable: true, code: 'internal_error', message };
}
