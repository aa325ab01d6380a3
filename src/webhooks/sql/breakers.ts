import type { DbOrTx } from '../../db/database.js';
import type { BreakerState, BreakerStateName } from '../breakerState.js';

/** Every persisted breaker, by endpoint key. */
export async function loadBreakerStates(db: DbOrTx): Promise<Map<string, BreakerState>> {
  const rows = await db.selectFrom('endpoint_breakers').select(['endpoint', 'state', 'failures', 'opened_at']).execute();
  return new Map(rows.map((r) => [r.endpoint, { state: r.state as BreakerStateName, failures: r.failures, openedAt: r.opened_at }]));
}

/** Writes the breaker of `endpoint` (insert or replace). */
export async function saveBreakerState(db: DbOrTx, endpoint: string, host: string, s: BreakerState, now: number): Promise<void> {
  await db
    .insertInto('endpoint_breakers')
    .values({ endpoint, host, state: s.state, failures: s.failures, opened_at: s.openedAt, updated_at: now })
    .onConflict((oc) => oc.column('endpoint').doUpdateSet({ state: s.state, failures: s.failures, opened_at: s.openedAt, updated_at: now }))
    .execute();
}

/** Pending deliveries per endpoint (what a breaker holds back while open). */
export async function pendingByEndpoint(db: DbOrTx): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('deliveries')
    .select((eb) => ['endpoint', eb.fn.countAll<number>().as('n')])
    .where('status', '=', 'pending')
    .groupBy('endpoint')
    .execute();
  return new Map(rows.map((r) => [r.endpoint, Number(r.n)]));
}
