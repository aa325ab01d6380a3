import type { DbOrTx } from '../../db/database.js';
import type { BreakerState, BreakerStateName } from '../breakerState.js';

/** Every persisted breaker, by host. */
export async function loadBreakerStates(db: DbOrTx): Promise<Map<string, BreakerState>> {
  const rows = await db.selectFrom('breaker_states').select(['host', 'state', 'failures', 'opened_at']).execute();
  return new Map(rows.map((r) => [r.host, { state: r.state as BreakerStateName, failures: r.failures, openedAt: r.opened_at }]));
}

/** Writes the breaker of `host` (insert or replace). */
export async function saveBreakerState(db: DbOrTx, host: string, s: BreakerState, now: number): Promise<void> {
  await db
    .insertInto('breaker_states')
    .values({ host, state: s.state, failures: s.failures, opened_at: s.openedAt, updated_at: now })
    .onConflict((oc) => oc.column('host').doUpdateSet({ state: s.state, failures: s.failures, opened_at: s.openedAt, updated_at: now }))
    .execute();
}
