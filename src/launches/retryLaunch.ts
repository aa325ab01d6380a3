import type { Db } from '../db/database.js';
import type { DeadLetterRow } from '../db/schema.js';
import type { Clock } from '../lib/clock.js';
import { ConflictError } from '../lib/errors.js';
import { recordEvent, type OutboxSignal } from '../webhooks/outbox.js';

/**
 * Requeues a failed launch from its dead letter: the failed step goes back to pending (its recorded
 * transactions kept, so the resume checks them before any re-send); completed steps stay done.
 */
export async function retryLaunch(deps: { db: Db; clock: Clock; signal: OutboxSignal; wake(): void }, deadLetter: DeadLetterRow): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now();
    const requeued = await trx
      .updateTable('launches')
      .set({ status: 'queued', error: null, completed_at: null, run_after: now, updated_at: now, lease_owner: null, lease_expires_at: null })
      .where('id', '=', deadLetter.launch_id)
      .where('status', '=', 'failed')
      .executeTakeFirst();
    if (Number(requeued.numUpdatedRows) === 0) throw new ConflictError(`Launch ${deadLetter.launch_id} is not failed; nothing to retry`);
    await trx
      .updateTable('launch_steps')
      .set({ status: 'pending', attempts: 0, completed_at: null })
      .where('launch_id', '=', deadLetter.launch_id)
      .where('status', 'in', ['failed', 'running'])
      .execute();
    await recordEvent(trx, deps.clock, {
      launchId: deadLetter.launch_id,
      event: 'launch.queued',
      data: { status: 'queued', retry: true, resumeAt: deadLetter.step },
    });
  });
  deps.signal.notify();
  deps.wake();
}
