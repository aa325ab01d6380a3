import type { DbOrTx } from '../../db/database.js';
import type { WebhookEndpointRow } from '../../db/schema.js';
/** A page of results: `limit` rows from `offset`. */
type Page = { limit: number; offset: number };

/** One endpoint, if it exists and `owner` (when given) owns it. */
export async function findEndpoint(db: DbOrTx, id: string, owner: string | undefined): Promise<WebhookEndpointRow | undefined> {
  let q = db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id);
  if (owner !== undefined) q = q.where('owner', '=', owner);
  return q.executeTakeFirst();
}

/** An owner's endpoints (every owner's when `owner` is undefined), newest first. */
export async function listEndpoints(db: DbOrTx, owner: string | undefined, page: Page): Promise<{ rows: WebhookEndpointRow[]; total: number }> {
  let base = db.selectFrom('webhook_endpoints');
  if (owner !== undefined) base = base.where('owner', '=', owner);
  const rows = await base.selectAll().orderBy('created_at', 'desc').orderBy('id').limit(page.limit).offset(page.offset).execute();
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return { rows, total: Number(n) };
}

/** The enabled endpoints of an owner: the fan-out targets of each of its events. */
export async function enabledEndpointsOf(db: DbOrTx, owner: string): Promise<Pick<WebhookEndpointRow, 'id' | 'url' | 'events'>[]> {
  return db.selectFrom('webhook_endpoints').select(['id', 'url', 'events']).where('owner', '=', owner).where('disabled_at', 'is', null).execute();
}

/**
 * Disables an enabled endpoint and pauses its pending deliveries (a paused delivery is never
 * claimed; enabling resumes it). False when it was already disabled.
 */
export async function disableEndpoint(db: DbOrTx, id: string, reason: string, now: number): Promise<boolean> {
  const r = await db.updateTable('webhook_endpoints').set({ disabled_at: now, disabled_reason: reason, updated_at: now }).where('id', '=', id).where('disabled_at', 'is', null).executeTakeFirst();
  if (r.numUpdatedRows === 0n) return false;
  await db.updateTable('deliveries').set({ status: 'paused', updated_at: now }).where('endpoint_id', '=', id).where('status', '=', 'pending').execute();
  return true;
}

/** Enables a disabled endpoint; its paused deliveries are due at once. */
export async function enableEndpoint(db: DbOrTx, id: string, now: number): Promise<void> {
  const r = await db
    .updateTable('webhook_endpoints')
    .set({ disabled_at: null, disabled_reason: null, failing_since: null, updated_at: now })
    .where('id', '=', id)
    .where('disabled_at', 'is not', null)
    .executeTakeFirst();
  if (r.numUpdatedRows === 0n) return;
  await db.updateTable('deliveries').set({ status: 'pending', next_attempt_at: now, updated_at: now }).where('endpoint_id', '=', id).where('status', '=', 'paused').execute();
}
