import type { DbOrTx } from '../../db/database.js';
/** A page of results: `limit` rows from `offset`. */
type Page = { limit: number; offset: number };

/** A page of a launch's event log in sequence order, with the exact bodies that were sent. */
export async function listLaunchEvents(db: DbOrTx, launchId: string, page: Page) {
  const base = db.selectFrom('outbox_events').where('launch_id', '=', launchId);
  const rows = await base.select(['id', 'event', 'sequence', 'body', 'request_id', 'created_at']).orderBy('sequence').limit(page.limit).offset(page.offset).execute();
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return { rows, total: Number(n) };
}
