import type { Db, Tx } from '../db/database.js';
import type { DeliveryRow } from '../db/schema.js';
import type { AttemptOutcome } from './httpClient.js';
import { delayHonouringRetryAfter } from './retryAfter.js';
import { retryDelayAfter } from './schedule.js';
import { insertAttempts, type AttemptRow } from './sql/attempts.js';
import { insertDeadLetter } from '../deadLetters/store.js';
import { endFailingRuns } from './endpoints/endpointHealth.js';
import { keepPaused, markDeliveredMany, markFailed, scheduleRetry, settleCanceled } from './sql/settleDeliveries.js';

/**
 * `paused` and `canceled`: the delivery was paused (its endpoint disabled) or canceled (its endpoint
 * deleted) while the attempt was out; the attempt is logged and that state stands (docs/webhooks.md).
 */
export type SettleResult = 'delivered' | 'retrying' | 'failed' | 'paused' | 'canceled' | 'lease_lost';

export interface SettleInput {
  delivery: Pick<DeliveryRow, 'id' | 'launch_id' | 'event_id' | 'attempt_count' | 'lease_token'>;
  owner: string;
  launchOwner: string;
  outcome: AttemptOutcome;
  startedAt: number;
  now: number;
  schedule: readonly number[];
  /** The webhook endpoint (docs/webhooks.md) the delivery went to, if any: a success ends its failing run in this transaction. */
  endpointId?: string | null;
}

/**
 * Settles one attempt in one transaction: the delivery's new state (only while this exact claim —
 * owner and fencing token — still holds it), the attempt log row, after the last failure the dead
 * letter, and after a success to a webhook endpoint the end of that endpoint's failing run.
 */
export async function settleAttempt(db: Db, input: SettleInput): Promise<SettleResult> {
  return db.transaction().execute(async (trx) => (await settleAttemptsIn(trx, [input]))[0] ?? 'lease_lost');
}

/**
 * The writes of {@link settleAttempt} for several attempts, inside a transaction the caller holds
 * (the dispatcher's settle-and-claim): each delivery's fenced update (and dead letter) in turn, then
 * the attempt rows of those whose lease still held in one insert.
 */
export async function settleAttemptsIn(trx: Tx, inputs: readonly SettleInput[]): Promise<SettleResult[]> {
  const results: SettleResult[] = new Array<SettleResult>(inputs.length);
  // Successes (most of them) are marked delivered in one statement per status code and time.
  const delivered = new Map<string, number[]>();
  inputs.forEach((input, i) => {
    if (!input.outcome.ok) return;
    const key = `${input.outcome.statusCode}:${input.now}:${input.owner}`;
    delivered.set(key, [...(delivered.get(key) ?? []), i]);
  });
  for (const indexes of delivered.values()) {
    const first = inputs[indexes[0]!]!;
    const leases = indexes.map((i) => ({ id: inputs[i]!.delivery.id, owner: inputs[i]!.owner, token: inputs[i]!.delivery.lease_token }));
    const held = await markDeliveredMany(trx, leases, { now: first.now, statusCode: first.outcome.statusCode });
    for (const i of indexes) results[i] = held.has(inputs[i]!.delivery.id) ? 'delivered' : await settleIfCanceled(trx, inputs[i]!);
  }
  const recovered = new Set<string>();
  inputs.forEach((input, i) => {
    if (results[i] === 'delivered' && input.endpointId) recovered.add(input.endpointId);
  });
  await endFailingRuns(trx, [...recovered]);
  for (let i = 0; i < inputs.length; i++) if (!inputs[i]!.outcome.ok) results[i] = await settleState(trx, inputs[i]!);
  // A newer claim holds a lost delivery: it owns the delivery and its log now.
  await insertAttempts(
    trx,
    inputs.filter((_, i) => results[i] !== 'lease_lost').map(attemptRow),
  );
  return results;
}

/** The attempt log row of a settled attempt. */
export function attemptRow(input: SettleInput): Omit<AttemptRow, 'id'> {
  const { outcome } = input;
  return {
    delivery_id: input.delivery.id,
    attempt: input.delivery.attempt_count,
    started_at: input.startedAt,
    duration_ms: outcome.durationMs,
    status_code: outcome.statusCode,
    outcome: outcome.ok ? 'success' : 'failure',
    error_class: outcome.errorClass,
    error_message: outcome.errorMessage === null ? null : outcome.errorMessage.slice(0, 500),
    response_body: outcome.responseBody,
  };
}

/** A lease that did not settle: `canceled` when this claim still holds the delivery but it was canceled meanwhile, else lost. */
async function settleIfCanceled(trx: Tx, input: SettleInput): Promise<SettleResult> {
  const lease = { id: input.delivery.id, owner: input.owner, token: input.delivery.lease_token };
  return (await settleCanceled(trx, lease, { now: input.now, statusCode: input.outcome.statusCode })) ? 'canceled' : 'lease_lost';
}

/**
 * A failed attempt's new state, only while this exact claim holds the delivery; the dead letter
 * after the last failure — unless the delivery was paused or canceled while the attempt was out.
 */
async function settleState(trx: Tx, input: SettleInput): Promise<SettleResult> {
  const { delivery, outcome, now } = input;
  const attempt = delivery.attempt_count;
  const args = { id: delivery.id, owner: input.owner, token: delivery.lease_token, now, statusCode: outcome.statusCode, error: outcome.errorMessage };
  const scheduled = retryDelayAfter(input.schedule, attempt);
  if (scheduled !== undefined) {
    const delay = delayHonouringRetryAfter(input.schedule, attempt, scheduled, outcome.retryAfterMs);
    return (await scheduleRetry(trx, { ...args, nextAttemptAt: now + delay })) ? 'retrying' : settleIfCanceled(trx, input);
  }
  if (!(await markFailed(trx, args))) return (await keepPaused(trx, args)) ? 'paused' : settleIfCanceled(trx, input);
  await insertDeadLetter(trx, {
    kind: 'delivery',
    owner: input.launchOwner,
    launchId: delivery.launch_id,
    deliveryId: delivery.id,
    eventId: delivery.event_id,
    errorCode: 'delivery_failed',
    errorMessage: `${attempt} attempts failed; last: ${outcome.errorMessage ?? outcome.errorClass ?? 'unknown error'}`,
    now,
  });
  return 'failed';
}
