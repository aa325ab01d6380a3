import type { LaunchRow, StepRow } from '../db/schema.js';
import { parseJson } from '../lib/json.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * The API view of a step: status, attempts, timings, transactions, result, error. A step held up by
 * a transient chain fault is `waiting`, with the cause (`waitingFor`, the error code), when its
 * wait began and when it is tried next.
 */
export function presentStep(step: StepRow): Record<string, unknown> {
  const error = parseJson<{ code?: unknown } | null>(step.error, null);
  const waiting = step.status === 'waiting';
  return {
    name: step.name,
    status: step.status,
    attempts: step.attempts,
    waitingFor: waiting && typeof error?.code === 'string' ? error.code : null,
    waitingSince: waiting ? iso(step.waiting_since) : null,
    nextAttemptAt: waiting ? iso(step.next_attempt_at) : null,
    startedAt: iso(step.started_at),
    completedAt: iso(step.completed_at),
    durationMs: step.started_at !== null && step.completed_at !== null ? step.completed_at - step.started_at : null,
    transactions: parseJson(step.transactions, []),
    result: parseJson(step.result, null),
    error,
  };
}

/** The API view of a launch; never includes the webhook secret. */
export function presentLaunch(launch: LaunchRow, steps: StepRow[]): Record<string, unknown> {
  const request = parseJson<Record<string, unknown>>(launch.request, {});
  const results = parseJson<Record<string, unknown>>(launch.results, {});
  return {
    id: launch.id,
    status: launch.status,
    ...request,
    // The current destination: PATCH /launches/{id} may have changed it since the request.
    webhookUrl: launch.webhook_url,
    createdAt: iso(launch.created_at),
    updatedAt: iso(launch.updated_at),
    startedAt: iso(launch.started_at),
    completedAt: iso(launch.completed_at),
    steps: steps.map(presentStep),
    results: launch.status === 'complete' ? results : null,
    partialResults: launch.status === 'complete' ? null : results,
    error: parseJson(launch.error, null),
  };
}
