import type { Selectable } from 'kysely';
import type { DbOrTx } from '../../db/database.js';
import type { DeliveryAttemptsTable } from '../../db/schema.js';
import { newSortableId } from '../../lib/ids.js';
import { execSql } from '../../db/sqlText.js';

export type AttemptRow = Selectable<DeliveryAttemptsTable>;

/** Logs attempts in one statement (docs/delivery.md): number, time, status code, duration, error class, truncated body. */
export async function insertAttempts(db: DbOrTx, rows: ReadonlyArray<Omit<AttemptRow, 'id'>>): Promise<void> {
  if (rows.length === 0) return;
  const params: unknown[] = [];
  for (const r of rows) params.push(newSortableId('att'), r.delivery_id, r.attempt, r.started_at, r.duration_ms, r.status_code, r.outcome, r.error_class, r.error_message, r.response_body);
  await execSql(db, insertAttemptsText(rows.length), params);
}

const insertTexts: string[] = [];

/** The dispatcher logs one to a few dozen attempts per statement: one text per row count. */
function insertAttemptsText(count: number): string {
  let text = insertTexts[count];
  if (text === undefined) {
    const row = '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';
    text = `insert into delivery_attempts (id, delivery_id, attempt, started_at, duration_ms, status_code, outcome, error_class, error_message, response_body) values ${row}${`, ${row}`.repeat(count - 1)}`;
    insertTexts[count] = text;
  }
  return text;
}

/** Every attempt of the given deliveries, in the order they were made (a recovered delivery's new series, numbered from 1, after its old one). */
export async function listAttempts(db: DbOrTx, deliveryIds: string[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  return db.selectFrom('delivery_attempts').selectAll().where('delivery_id', 'in', deliveryIds).orderBy('delivery_id').orderBy('started_at').orderBy('attempt').execute();
}
