import type { Db, Tx } from '../db/database.js';
import type { DeadLetterRow } from '../db/schema.js';
import type { Clock } from '../lib/clock.js';
import { ConflictError } from '../lib/errors.js';
import { getDeadLetter, markDeadLetterResolved, markDeadLetterRetried } from './store.js';

export interface DeadLetterRetryDeps {
  db: Db;
  clock: Clock;
  /** Puts the failed launch back in the queue inside `trx`; throws a ConflictError when it is not failed. */
  requeueLaunch(trx: Tx, deadLetter: DeadLetterRow): Promise<void>;
  /** Before a launch retry: throws a ConflictError when the launch can never succeed again (a creator-signed launch whose nonce accounts were closed). */
  checkLaunchRetry?(deadLetter: DeadLetterRow): Promise<void>;
  /** Queues a fresh attempt series of the dead letter's event inside `trx`. */
  redeliver(trx: Tx, deadLetter: DeadLetterRow & { event_id: string }): Promise<void>;
  /** Called after a retry commits, so the runner or the dispatcher picks the work up at once. */
  wake(kind: DeadLetterRow['kind']): void;
}

const conflictNotOpen = (dl: Pick<DeadLetterRow, 'id' | 'status'>) =>
  new ConflictError(`Dead letter ${dl.id} is ${dl.status}; only open dead letters can be retried`, { status: dl.status });

/**
 * Retries an open dead letter: a delivery is redelivered (fresh attempt series of the same event),
 * a launch resumes at its failed step. The dead letter becomes `retried` in the same transaction as
 * the requeue, so two concurrent retries queue the work once and a crash leaves both or neither.
 * A new failure makes a new dead letter.
 */
export async function retryDeadLetter(deps: DeadLetterRetryDeps, dl: DeadLetterRow): Promise<DeadLetterRow> {
  if (dl.status !== 'open') throw conflictNotOpen(dl);
  const eventId = dl.event_id;
  if (dl.kind === 'watch') {
    throw new ConflictError(`Dead letter ${dl.id} records a transaction its watch could not decode and skipped; there is nothing to retry: resolve it once reviewed`);
  }
  if (dl.kind === 'delivery' && eventId === null) throw new ConflictError(`Dead letter ${dl.id} names no event to redeliver`);
  if (dl.kind === 'launch') await deps.checkLaunchRetry?.(dl);
  await deps.db.transaction().execute(async (trx) => {
    // Claiming the dead letter first makes two concurrent retries queue one requeue, not two.
    if (!(await markDeadLetterRetried(trx, dl.id, deps.clock.now()))) throw conflictNotOpen({ id: dl.id, status: 'retried' });
    if (dl.kind === 'delivery') await deps.redeliver(trx, { ...dl, event_id: eventId! });
    else await deps.requeueLaunch(trx, dl);
  });
  deps.wake(dl.kind);
  return (await getDeadLetter(deps.db, dl.id)) ?? dl;
}

/** Marks a dead letter reviewed without retrying; resolving twice is harmless. */
export async function resolveDeadLetter(deps: Pick<DeadLetterRetryDeps, 'db' | 'clock'>, dl: DeadLetterRow): Promise<DeadLetterRow> {
  if (dl.status !== 'resolved') await markDeadLetterResolved(deps.db, dl.id, deps.clock.now());
  return (await getDeadLetter(deps.db, dl.id)) ?? dl;
}
