import type { DeadLetterRow } from '../db/schema.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

/** A dead letter with camelCase fields. */
export function presentDeadLetter(dl: DeadLetterRow) {
  return {
    id: dl.id,
    kind: dl.kind,
    owner: dl.owner,
    launchId: dl.launch_id,
    deliveryId: dl.delivery_id,
    eventId: dl.event_id,
    step: dl.step,
    errorCode: dl.error_code,
    errorMessage: dl.error_message,
    status: dl.status,
    retryCount: dl.retry_count,
    createdAt: iso(dl.created_at),
    updatedAt: iso(dl.updated_at),
    resolvedAt: iso(dl.resolved_at),
  };
}
