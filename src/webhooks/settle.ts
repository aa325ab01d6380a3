import type { Db, Tx } from '../db/database.js';
import type { DeliveryRow } from '../db/schema.js';
import type { AttemptOutcome } from './httpClient.js';
import { delayHonouringRetryAfter } from './retryAfter.js';
import { retryDelayAfter } from './schedule.js';
import { insertAttempt } from './sql/attempts.js';
import { insertDeadLetter } from '../deadLetters/store.js';
import { markDelivered, markFailed, scheduleRetry } from './sql/settleDeliveries.js';

export type SettleResult = 'delivered' | 'retrying' | 'failed' | 'lease_lost';

export interface SettleInput {
  delivery: Pick<DeliveryRow, 'id' | 'launch_id' | 'event_id' | 'attempt_count' | 'lease_token'>;
  owner: string;
  launchOwner: string;
  outcome: AttemptOutcome;
  startedAt: number;
  now: number;
  schedule: readonly number[];
}

/**
 * Settles one attempt in one transaction: the delivery's new state (only while this exact claim —
 * owner and fencing token — still holds it), the attempt log row, and — after the last failure — the dead letter.
 */
export async function settleAttempt(db: Db, input: SettleInput): Promise<SettleResult> {
  return db.transaction().execute((trx) => settleAttemptIn(trx, input));
}

/** The writes of {@link settleAttempt}, inside a transaction the caller holds (see settleBatcher). */
export async function settleAttemptIn(trx: Tx, input: SettleInput): Promise<SettleResult> {
  const { delivery, outcome, now } = input;
  const attempt = delivery.attempt_count;
  const args = { id: delivery.id, owner: input.owner, token: delivery.lease_token, now, statusCode: outcome.statusCode, error: outcome.errorMessage };
  {
    let result: SettleResult;
    if (outcome.ok) {
      result = (await markDelivered(trx, args)) ? 'delivered' : 'lease_lost';
    } else {
      const scheduled = retryDelayAfter(input.schedule, attempt);
      if (scheduled !== undefined) {
        const delay = delayHonouringRetryAfter(input.schedule, attempt, scheduled, outcome.retryAfterMs);
        result = (await scheduleRetry(trx, { ...args, nextAttemptAt: now + delay })) ? 'retrying' : 'lease_lost';
      } else if (await markFailed(trx, args)) {
        result = 'failed';
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
      } else {
        result = 'lease_lost';
      }
    }
    // A newer claim holds the delivery: it owns the delivery and its log now.
    if (result === 'lease_lost') return result;
    await insertAttempt(trx, {
      delivery_id: delivery.id,
      attempt,
      started_at: input.startedAt,
      duration_ms: outcome.durationMs,
      status_code: outcome.statusCode,
      outcome: outcome.ok ? 'success' : 'failure',
      error_class: outcome.errorClass,
      error_message: outcome.errorMessage === null ? null : outcome.errorMessage.slice(0, 500),
      response_body: outcome.responseBody,
    });
    return result;
  }
}
