/**
 * The retry schedule (SPEC §4.3) as pure functions. `schedule[i]` is the delay before attempt i+1,
 * counted from the failure of attempt i; the first entry (normally 0) is the delay of attempt 1,
 * which the outbox queues as soon as the event commits. Default `[0, 30s, 2m, 10m, 1h]`.
 */
export const DEFAULT_RETRY_SCHEDULE: readonly number[] = [0, 30_000, 120_000, 600_000, 3_600_000];

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
