/**
 * The retry schedule (docs/delivery.md) as pure functions. `schedule[i]` is the delay before attempt i+1,
 * counted from the failure of attempt i; the first entry (normally 0) is the delay of attempt 1,
 * which the outbox queues as soon as the event commits. The default schedule is configuration's
 * (`WEBHOOK_RETRY_SCHEDULE`, docs/configuration.md).
 */

/** How many attempts a delivery gets before it is failed and dead-lettered. */
export function maxAttempts(schedule: readonly number[]): number {
  return Math.max(1, schedule.length);
}

/**
 * The delay after attempt `failedAttempt` (1-based) failed, before the next one; undefined when
 * that was the last attempt and the delivery must be failed.
 */
export function retryDelayAfter(schedule: readonly number[], failedAttempt: number): number | undefined {
  if (failedAttempt >= maxAttempts(schedule)) return undefined;
  return schedule[failedAttempt] ?? undefined;
}
