import type { DbOrTx } from '../db/database.js';
import type { DeadLetterRow } from '../db/schema.js';
import { newSortableId } from '../lib/ids.js';

export interface DeadLetterInput {
  kind: DeadLetterRow['kind'];
  owner: string;
  launchId: string;
  /** Delivery dead letters: the delivery and its event. */
  deliveryId?: string;
  eventId?: string;
  /** Launch dead letters: the failed step, where a retry resumes. */
  step?: string;
  errorCode: string;
  errorMessage: string;
  now: number;
}

/** Records a launch job or a delivery for review (docs/delivery.md, "Dead letters"). */
export async function insertDeadLetter(db: DbOrTx, d: DeadLetterInput): Promise<string> {
  const id = newSortableId('dlq');
  await db
    .insertInto('dead_letters')
    .values({
      id,
      kind: d.kind,
      owner: d.owner,
      launch_id: d.launchId,
      delivery_id: d.deliveryId ?? null,
      event_id: d.eventId ?? null,
      step: d.step ?? null,
      error_code: d.errorCode,
      error_message: d.errorMessage,
      status: 'open',
      retry_count: 0,
      created_at: d.now,
      updated_at: d.now,
      resolved_at: null,
    })
    .execute();
  return id;
}

export async function getDeadLetter(db: DbOrTx, id: string): Promise<DeadLetterRow | undefined> {
  return db.selectFrom('dead_letters').selectAll().where('id', '=', id).executeTakeFirst();
}

export interface DeadLetterFilter {
  kind?: DeadLetterRow['kind'];
  status?: DeadLetterRow['status'];
}

/** A page of dead letters, newest first. */
export async function listDeadLetters(db: DbOrTx, filter: DeadLetterFilter, limit: number, offset: number): Promise<DeadLetterRow[]> {
  return db
    .selectFrom('dead_letters')
    .selectAll()
    .$if(filter.kind !== undefined, (q) => q.where('kind', '=', filter.kind!))
    .$if(filter.status !== undefined, (q) => q.where('status', '=', filter.status!))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute();
}

export async function countDeadLetters(db: DbOrTx, filter: DeadLetterFilter): Promise<number> {
  const row = await db
    .selectFrom('dead_letters')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .$if(filter.kind !== undefined, (q) => q.where('kind', '=', filter.kind!))
    .$if(filter.status !== undefined, (q) => q.where('status', '=', filter.status!))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Records that an operator retried the open dead letter; false when it was no longer open. */
export async function markDeadLetterRetried(db: DbOrTx, id: string, now: number): Promise<boolean> {
  const r = await db
    .updateTable('dead_letters')
    .set((eb) => ({ status: 'retried', retry_count: eb('retry_count', '+', 1), updated_at: now }))
    .where('id', '=', id)
    .where('status', '=', 'open')
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Marks the dead letter reviewed without retrying it. */
export async function markDeadLetterResolved(db: DbOrTx, id: string, now: number): Promise<void> {
  await db.updateTable('dead_letters').set({ status: 'resolved', resolved_at: now, updated_at: now }).where('id', '=', id).execute();
}
