/** The longest Retry-After honoured; the schedule's end caps it further (see delayHonouringRetryAfter). */
const MAX_RETRY_AFTER_MS = 7 * 24 * 3600_000;

/**
 * A `Retry-After` header as milliseconds from `now`: delta-seconds (`120`) or an HTTP date.
 * Undefined when absent, malformed or in the past.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!raw) return undefined;
  let ms: number;
  if (/^\d{1,10}$/.test(raw)) ms = Number(raw) * 1000;
  else {
    const at = Date.parse(raw);
    if (Number.isNaN(at) || !/[a-z]/i.test(raw)) return undefined;
    ms = at - now;
  }
  return ms > 0 ? Math.min(ms, MAX_RETRY_AFTER_MS) : undefined;
}

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
