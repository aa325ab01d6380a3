export { parseRetryAfter } from '../lib/retryAfter.js';

/** Statuses whose Retry-After is honoured (RFC 9110: 503 and 429 carry it as a request to wait). */
export function honoursRetryAfter(status: number): boolean {
  return status === 429 || status === 503;
}

/**
 * The delay before the next attempt after attempt `failedAttempt` (1-based) failed with a
 * Retry-After of `retryAfterMs`: the scheduled delay, or longer when the receiver asked for it, but
 * never past the schedule's end — the time the last attempt would happen if every remaining
 * attempt failed on schedule from now (the sum of the remaining delays). A receiver asking for a
 * day is therefore tried again within the schedule's window instead of never.
 */
export function delayHonouringRetryAfter(schedule: readonly number[], failedAttempt: number, scheduled: number, retryAfterMs: number | undefined): number {
  if (retryAfterMs === undefined || retryAfterMs <= scheduled) return scheduled;
  const scheduleEnd = schedule.slice(failedAttempt).reduce((sum, d) => sum + d, 0);
  return Math.max(scheduled, Math.min(retryAfterMs, scheduleEnd));
}
