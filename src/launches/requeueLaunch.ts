import type { DbOrTx } from '../db/database.js';
import type { DeadLetterRow } from '../db/schema.js';
import type { Clock } from '../lib/clock.js';
import { ConflictError } from '../lib/errors.js';
import { recordEvent } from '../webhooks/outbox.js';

/**
 * Requeues a failed launch from its dead letter, inside the caller's transaction: the failed step
 * goes back to pending (its recorded transactions kept, so the resume checks them before any
 * re-send); completed steps stay done; `launch.queued` is recorded. Notify the dispatcher and wake
 * the runner after the commit.
 */
export async function requeueFailedLaunch(trx: DbOrTx, clock: Clock, deadLetter: DeadLetterRow): Promise<void> {
  const now = clock.now();
  const requeued = await trx
    .updateTable('launches')
    .set({ status: 'queued', error: null, completed_at: null, run_after: now, updated_at: now, lease_owner: null, lease_expires_at: null })
    .where('id', '=', deadLetter.launch_id)
    .where('status', '=', 'failed')
    .executeTakeFirst();
  if (Number(requeued.numUpdatedRows) === 0) throw new ConflictError(`Launch ${deadLetter.launch_id} is not failed; nothing to retry`);
  await trx
    .updateTable('launch_steps')
    .set({ status: 'pending', attempts: 0, completed_at: null, waiting_since: null, next_attempt_at: null })
    .where('launch_id', '=', deadLetter.launch_id)
    .where('status', 'in', ['failed', 'running', 'waiting'])
    .execute();
  await recordEvent(trx, clock, {
    launchId: deadLetter.launch_id,
    event: 'launch.queued',
    data: { status: 'queued', retry: true, resumeAt: deadLetter.step },
  });
}
