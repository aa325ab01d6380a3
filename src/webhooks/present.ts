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

/** One logged attempt as the API shows it. */
export function presentAttempt(a: AttemptRow) {
  return {
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
    attempts: attempts.map(presentAttempt),
  };
}
