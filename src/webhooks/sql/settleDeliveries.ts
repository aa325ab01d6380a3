import type { DbOrTx } from '../../db/database.js';

/** Gives a claimed delivery back unattempted (its breaker opened meanwhile): the claim's attempt is returned. */
export async function releaseClaim(db: DbOrTx, id: string, owner: string, now: number): Promise<void> {
  await db
    .updateTable('deliveries')
    .set((eb) => ({ lease_owner: null, lease_expires_at: null, attempt_count: eb('attempt_count', '-', 1), updated_at: now }))
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .execute();
}

export interface SettleArgs {
  id: string;
  owner: string;
  now: number;
  statusCode: number | null;
  error: string | null;
}

/** Marks a leased delivery delivered; false when the lease was lost to another dispatcher. */
export async function markDelivered(db: DbOrTx, a: SettleArgs): Promise<boolean> {
  const r = await db
    .updateTable('deliveries')
    .set({ status: 'delivered', lease_owner: null, lease_expires_at: null, last_status_code: a.statusCode, last_error: null, completed_at: a.now, updated_at: a.now })
    .where('id', '=', a.id)
    .where('lease_owner', '=', a.owner)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Schedules the next attempt of a leased delivery; false when the lease was lost. */
export async function scheduleRetry(db: DbOrTx, a: SettleArgs & { nextAttemptAt: number }): Promise<boolean> {
  const r = await db
    .updateTable('deliveries')
    .set({ lease_owner: null, lease_expires_at: null, next_attempt_at: a.nextAttemptAt, last_status_code: a.statusCode, last_error: a.error, updated_at: a.now })
    .where('id', '=', a.id)
    .where('lease_owner', '=', a.owner)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Marks a leased delivery failed after its last attempt; false when the lease was lost. */
export async function markFailed(db: DbOrTx, a: SettleArgs): Promise<boolean> {
  const r = await db
    .updateTable('deliveries')
    .set({ status: 'failed', lease_owner: null, lease_expires_at: null, last_status_code: a.statusCode, last_error: a.error, completed_at: a.now, updated_at: a.now })
    .where('id', '=', a.id)
    .where('lease_owner', '=', a.owner)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}
