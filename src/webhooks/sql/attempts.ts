import type { Selectable } from 'kysely';
import type { DbOrTx } from '../../db/database.js';
import type { DeliveryAttemptsTable } from '../../db/schema.js';
import { newId } from '../../lib/ids.js';

export type AttemptRow = Selectable<DeliveryAttemptsTable>;

/** Logs attempts in one statement (docs/delivery.md): number, time, status code, duration, error class, truncated body. */
export async function insertAttempts(db: DbOrTx, rows: ReadonlyArray<Omit<AttemptRow, 'id'>>): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto('delivery_attempts')
    .values(rows.map((row) => ({ id: newId('att'), ...row })))
    .execute();
}

/** Every attempt of the given deliveries, in attempt order. */
export async function listAttempts(db: DbOrTx, deliveryIds: string[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  return db.selectFrom('delivery_attempts').selectAll().where('delivery_id', 'in', deliveryIds).orderBy('delivery_id').orderBy('attempt').orderBy('started_at').execute();
}
