/** `Retry-After` as webhook receivers and RPC providers send it (RFC 9110). */

/** The longest Retry-After honoured; callers cap it further (webhooks: the schedule's end; launches: LAUNCH_TRANSIENT_DEADLINE). */
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
