import type { AttemptRow } from './sql/attempts.js';
import type { DeliveryView } from './sql/deliveryQueries.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

/** The endpoint URL without any user:password part, which may hold a credential. */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return '[invalid url]';
  }
}

function parseBody(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return body;
  }
}

/**
 * One logged attempt as the API shows it. `attempt` is its place in its series (the retry schedule's
 * position, as `X-Service-Attempt` said); `series` counts the delivery's series: 1, then one more
 * for each recover that brought the same delivery back (docs/webhooks.md, "Recover").
 */
export function presentAttempt(a: AttemptRow, series = 1) {
  return {
    series,
    attempt: a.attempt,
    startedAt: iso(a.started_at),
    durationMs: a.duration_ms,
    statusCode: a.status_code,
    outcome: a.outcome,
    errorClass: a.error_class,
    error: a.error_message,
    responseBody: a.response_body,
  };
}

/** A delivery with its attempts (docs/api.md `{"deliveries": [...]}`); the URL is shown, never the secret. */
export function presentDelivery(d: DeliveryView, attempts: AttemptRow[] = []) {
  return {
    id: d.id,
    eventId: d.event_id,
    event: d.event,
    sequence: d.sequence,
    launchId: d.launch_id,
    url: displayUrl(d.url),
    endpointId: d.endpoint_id,
    status: d.status,
    attemptCount: d.attempt_count,
    nextAttemptAt: d.status === 'pending' ? iso(d.next_attempt_at) : null,
    lastStatusCode: d.last_status_code,
    lastError: d.last_error,
    createdAt: iso(d.created_at),
    completedAt: iso(d.completed_at),
    // The exact event body every attempt of this delivery sends.
    payload: parseBody(d.body),
    attempts: inSeries(attempts).map(({ attempt, series }) => presentAttempt(attempt, series)),
  };
}

/** A delivery's attempts in the order made, each with its series: a new one begins where the number does not go up (a recover restarted it at 1). */
function inSeries(attempts: AttemptRow[]): Array<{ attempt: AttemptRow; series: number }> {
  let series = 1;
  let last = 0;
  return attempts.map((attempt) => {
    if (attempt.attempt <= last) series += 1;
    last = attempt.attempt;
    return { attempt, series };
  });
}
