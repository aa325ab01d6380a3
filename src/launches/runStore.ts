import { sql } from 'kysely';
import type { DbOrTx } from '../db/database.js';
import type { LaunchRow } from '../db/schema.js';

/**
 * Claims the oldest runnable launch with a lease in one statement: queued or processing, due,
 * and not leased (or its lease expired, i.e. its runner died).
 */
export async function claimLaunch(db: DbOrTx, args: { owner: string; now: number; leaseMs: number }): Promise<LaunchRow | undefined> {
  return db
    .updateTable('launches')
    .set((eb) => ({ lease_owner: args.owner, lease_expires_at: args.now + args.leaseMs, run_count: eb('run_count', '+', 1) }))
    .where('id', '=', (eb) =>
      eb
        .selectFrom('launches')
        .select('id')
        .where('status', 'in', ['queued', 'processing'])
        .where('run_after', '<=', args.now)
        .where((w) => w.or([w('lease_owner', 'is', null), w('lease_expires_at', '<', args.now)]))
        .orderBy('run_after', 'asc')
        .orderBy('created_at', 'asc')
        .limit(1),
    )
    .returningAll()
    .executeTakeFirst();
}

/** Extends a lease this runner holds; false when it lost the lease. */
export async function extendLease(db: DbOrTx, args: { launchId: string; owner: string; until: number }): Promise<boolean> {
  const result = await db
    .updateTable('launches')
    .set({ lease_expires_at: args.until })
    .where('id', '=', args.launchId)
    .where('lease_owner', '=', args.owner)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Gives a launch back: no lease, next run not before `runAfter`. */
export async function releaseLaunch(db: DbOrTx, args: { launchId: string; owner: string; runAfter: number; now: number }): Promise<void> {
  await db
    .updateTable('launches')
    .set({ lease_owner: null, lease_expires_at: null, run_after: args.runAfter, updated_at: args.now })
    .where('id', '=', args.launchId)
    .where('lease_owner', '=', args.owner)
    .execute();
}

/** Marks the step running and counts the attempt. */
export async function startStep(db: DbOrTx, args: { launchId: string; step: string; now: number }): Promise<number> {
  const row = await db
    .updateTable('launch_steps')
    .set((eb) => ({ status: 'running' as const, attempts: eb('attempts', '+', 1), started_at: sql<number>`coalesce(started_at, ${args.now})` }))
    .where('launch_id', '=', args.launchId)
    .where('name', '=', args.step)
    .returning('attempts')
    .executeTakeFirstOrThrow();
  return row.attempts;
}

/** Persists the step's signed transactions before they are sent (SPEC §3). */
export async function savePendingTx(db: DbOrTx, args: { launchId: string; step: string; pending: Record<string, unknown> }): Promise<void> {
  await db
    .updateTable('launch_steps')
    .set({ pending_tx: JSON.stringify(args.pending) })
    .where('launch_id', '=', args.launchId)
    .where('name', '=', args.step)
    .execute();
}

export async function completeStep(
  db: DbOrTx,
  args: { launchId: string; step: string; result: unknown; transactions: unknown; now: number },
): Promise<void> {
  await db
    .updateTable('launch_steps')
    .set({ status: 'complete', result: JSON.stringify(args.result), transactions: JSON.stringify(args.transactions), error: null, completed_at: args.now })
    .where('launch_id', '=', args.launchId)
    .where('name', '=', args.step)
    .execute();
}

/** Records a retriable step failure: back to pending with the last error. */
export async function deferStep(db: DbOrTx, args: { launchId: string; step: string; error: unknown }): Promise<void> {
  await db
    .updateTable('launch_steps')
    .set({ status: 'pending', error: JSON.stringify(args.error) })
    .where('launch_id', '=', args.launchId)
    .where('name', '=', args.step)
    .execute();
}

export async function failStep(db: DbOrTx, args: { launchId: string; step: string; error: unknown; now: number }): Promise<void> {
  await db
    .updateTable('launch_steps')
    .set({ status: 'failed', error: JSON.stringify(args.error), completed_at: args.now })
    .where('launch_id', '=', args.launchId)
    .where('name', '=', args.step)
    .execute();
}

/** Another runner took this launch over (our lease expired); whatever we were committing is void. */
export class LeaseLostError extends Error {
  constructor(launchId: string) {
    super(`lease on launch ${launchId} was lost`);
    this.name = 'LeaseLostError';
  }
}

/** Updates the launch row while this runner holds its lease; throws {@link LeaseLostError} otherwise. */
export async function updateLeasedLaunchOrThrow(db: DbOrTx, args: Parameters<typeof updateLeasedLaunch>[1]): Promise<void> {
  if (!(await updateLeasedLaunch(db, args))) throw new LeaseLostError(args.launchId);
}

/** Updates the launch row only while this runner holds its lease. */
export async function updateLeasedLaunch(
  db: DbOrTx,
  args: { launchId: string; owner: string; set: Partial<Pick<LaunchRow, 'status' | 'results' | 'error' | 'started_at' | 'completed_at' | 'updated_at'>> & { lease_owner?: null; lease_expires_at?: null } },
): Promise<boolean> {
  const result = await db.updateTable('launches').set(args.set).where('id', '=', args.launchId).where('lease_owner', '=', args.owner).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
