import type { Db } from '../db/database.js';
import type { DeadLetterRow } from '../db/schema.js';
import { ConflictError } from '../lib/errors.js';
import type { Clock } from '../lib/clock.js';
import type { OutboxSignal } from './outbox.js';
import { redeliverEvent } from './redeliver.js';
import { getDeadLetter, markDeadLetterResolved, markDeadLetterRetried } from './sql/deadLetters.js';

export interface DeadLetterActionDeps {
  db: Db;
  clock: Clock;
  signal: OutboxSignal;
  /** Resumes a failed launch at its failed step (the launch runner's); need not touch the dead letter. */
  retryLaunch(deadLetter: DeadLetterRow): Promise<void>;
}

const conflictNotOpen = (dl: DeadLetterRow) => new ConflictError(`Dead letter ${dl.id} is ${dl.status}; only open dead letters can be retried`, { status: dl.status });

/**
 * Retries an open dead letter: a delivery is redelivered (fresh attempt series of the same event),
 * a launch is handed to `retryLaunch`. The dead letter becomes `retried`; a new failure makes a new one.
 */
export async function retryDeadLetter(deps: DeadLetterActionDeps, dl: DeadLetterRow): Promise<DeadLetterRow> {
  if (dl.status !== 'open') throw conflictNotOpen(dl);
  if (dl.kind === 'delivery') {
    const eventId = dl.event_id;
    if (eventId === null) throw new ConflictError(`Dead letter ${dl.id} names no event to redeliver`);
    await deps.db.transaction().execute(async (trx) => {
      // Claiming the dead letter first makes two concurrent retries queue one redelivery, not two.
      if (!(await markDeadLetterRetried(trx, dl.id, deps.clock.now()))) throw conflictNotOpen({ ...dl, status: 'retried' });
      await redeliverEvent(trx, deps.clock, { eventId, launchId: dl.launch_id });
    });
    deps.signal.notify();
  } else {
    await deps.retryLaunch(dl);
    await markDeadLetterRetried(deps.db, dl.id, deps.clock.now());
  }
  return (await getDeadLetter(deps.db, dl.id)) ?? dl;
}

/** Marks a dead letter reviewed without retrying; resolving twice is harmless. */
export async function resolveDeadLetter(deps: Pick<DeadLetterActionDeps, 'db' | 'clock'>, dl: DeadLetterRow): Promise<DeadLetterRow> {
  if (dl.status !== 'resolved') await markDeadLetterResolved(deps.db, dl.id, deps.clock.now());
  return (await getDeadLetter(deps.db, dl.id)) ?? dl;
}
