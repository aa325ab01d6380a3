import { sql, type ExpressionBuilder } from 'kysely';
import type { Db, DbOrTx } from '../db/database.js';
import { compiledQuery, type Params } from '../db/compiledQuery.js';
import { isPostgres, leaseDeadline, leaseNow } from '../db/dialect.js';
import type { Database, LaunchRow } from '../db/schema.js';
import type { EventTarget } from '../webhooks/outbox.js';

/**
 * A runner's hold on a launch: who claimed it and the fencing token of that claim. Every write
 * made under the lease names both, so after another claim (the lease expired during a stall or
 * a clock jump) the earlier holder's writes match no row and it stops (docs/architecture.md, Leases, fencing and attempt accounting).
 */
export interface LaunchLease {
  launchId: string;
  owner: string;
  token: number;
}

/** The lease of a claimed launch row. */
export function leaseOf(launch: Pick<LaunchRow, 'id' | 'lease_owner' | 'lease_token'>): LaunchLease {
  if (launch.lease_owner === null) throw new Error(`launch ${launch.id} is not leased`);
  return { launchId: launch.id, owner: launch.lease_owner, token: launch.lease_token };
}

/** Another claim took this launch over; whatever the holder was writing is void. */
export class LeaseLostError extends Error {
  constructor(launchId: string) {
    super(`lease on launch ${launchId} was lost`);
    this.name = 'LeaseLostError';
  }
}

/**
 * Claims the oldest runnable launch with a lease in one statement: queued or processing (or awaiting
 * signatures past its signing deadline), due, not
 * leased (or its lease expired, i.e. its runner died or stalled), and not one this process already
 * runs (`running`). The claim bumps the fencing token. `now` comes from the lease clock; on
 * PostgreSQL lease deadlines use the database clock instead (`leaseNow`) and the candidate is
 * locked with `FOR UPDATE SKIP LOCKED`, so concurrent claimers in several processes never take the
 * same launch and never wait on each other.
 */
export async function claimLaunch(db: DbOrTx, args: { owner: string; now: number; leaseMs: number; running?: readonly string[] }): Promise<LaunchRow | undefined> {
  const running = args.running ?? [];
  const params: Record<string, string | number> = { owner: args.owner, now: args.now, leaseMs: args.leaseMs };
  running.forEach((id, i) => (params[`running${i}`] = id));
  return claimStatement.first(db, params, running.length);
}

const claimStatement = compiledQuery<Record<string, string | number>, LaunchRow>((db: Db, p, shape) => {
  const running = Array.from({ length: Number(shape) }, (_, i) => p[`running${i}`] as string);
  return db
    .updateTable('launches')
    .set((eb) => ({
      lease_owner: p.owner as string,
      lease_expires_at: leaseDeadlineOf(db, p.now as number, p.leaseMs as number),
      lease_token: eb('lease_token', '+', 1),
      run_count: eb('run_count', '+', 1),
    }))
    .where('id', '=', (eb) =>
      eb
        .selectFrom('launches')
        .select('id')
        // awaiting_signatures: only once its signing deadline (its run_after) came, to fail it.
        .where('status', 'in', ['awaiting_signatures', 'queued', 'processing'])
        .where('run_after', '<=', p.now as number)
        .where((w) => w.or([w('lease_owner', 'is', null), w('lease_expires_at', '<', leaseNow(db, p.now as number))]))
        .$if(running.length > 0, (q) => q.where('id', 'not in', running))
        .orderBy('run_after', 'asc')
        .orderBy('created_at', 'asc')
        .limit(1)
        .$if(isPostgres(db), (q) => q.forUpdate().skipLocked()),
    )
    .returningAll();
});

/** {@link leaseDeadline} with the lease length as a parameter of its own (`now + leaseMs` on SQLite). */
function leaseDeadlineOf(db: Db, now: number, leaseMs: number) {
  return isPostgres(db) ? leaseDeadline(db, 0, leaseMs) : sql<number>`${now} + ${leaseMs}`;
}

/** The lease condition on the launch row itself. */
function holds(lease: LaunchLease) {
  return (eb: ExpressionBuilder<Database, 'launches'>) =>
    eb.and([eb('launches.id', '=', lease.launchId), eb('launches.lease_owner', '=', lease.owner), eb('launches.lease_token', '=', lease.token)]);
}

/**
 * The lease condition for a write to one of the launch's steps. On PostgreSQL the launch row is read
 * FOR SHARE: at READ COMMITTED an UPDATE re-checks only the rows it updates, so a plain EXISTS could
 * pass on a token another instance's claim has just replaced (its commit unseen by this statement),
 * and the step write — a pending transaction about to be sent — would land under a lost lease. The
 * share lock waits for such a claim and re-reads the row; a claim meanwhile skips the locked row.
 */
function stepUnderLease(db: DbOrTx, lease: Params<LaunchLease>, step: string) {
  return (eb: ExpressionBuilder<Database, 'launch_steps'>) =>
    eb.and([
      eb('launch_steps.launch_id', '=', lease.launchId),
      eb('launch_steps.name', '=', step),
      eb.exists(
        eb
          .selectFrom('launches')
          .select(sql<number>`1`.as('one'))
          .where('launches.id', '=', lease.launchId)
          .where('launches.lease_owner', '=', lease.owner)
          .where('launches.lease_token', '=', lease.token)
          .$if(isPostgres(db), (q) => q.forShare()),
      ),
    ]);
}

const changed = (result: { numUpdatedRows: bigint }) => result.numUpdatedRows > 0n;

function orThrow(lease: LaunchLease, held: boolean): void {
  if (!held) throw new LeaseLostError(lease.launchId);
}

/** Extends a lease this runner holds to `leaseMs` from now (the lease clock); false when it lost the lease. */
export async function extendLease(db: DbOrTx, lease: LaunchLease, args: { now: number; leaseMs: number }): Promise<boolean> {
  return changed(await db.updateTable('launches').set({ lease_expires_at: leaseDeadline(db, args.now, args.leaseMs) }).where(holds(lease)).executeTakeFirst());
}

/** Gives a launch back: no lease, next run not before `runAfter`. False when the lease was lost already. */
export async function releaseLaunch(db: DbOrTx, lease: LaunchLease, args: { runAfter: number; now: number }): Promise<boolean> {
  return changed(
    await db
      .updateTable('launches')
      .set({ lease_owner: null, lease_expires_at: null, run_after: args.runAfter, updated_at: args.now })
      .where(holds(lease))
      .executeTakeFirst(),
  );
}

/** Marks the step running and counts the attempt; throws {@link LeaseLostError} without the lease. */
export async function startStep(db: DbOrTx, lease: LaunchLease, args: { step: string; now: number }): Promise<number> {
  const row = await startStatement.first(db, { ...lease, step: args.step, now: args.now });
  if (!row) throw new LeaseLostError(lease.launchId);
  return row.attempts;
}

type StepWrite<T> = LaunchLease & { step: string } & T;

const startStatement = compiledQuery<StepWrite<{ now: number }>, { attempts: number }>((db: Db, p) =>
  db
    .updateTable('launch_steps')
    .set((eb) => ({ status: 'running' as const, attempts: eb('attempts', '+', 1), started_at: sql<number>`coalesce(started_at, ${p.now})` }))
    .where(stepUnderLease(db, p, p.step))
    .returning('attempts'),
);

/**
 * How a pending-transaction record must reach the disk before its transaction is sent:
 * - `full`: its own commit with `synchronous = FULL`. Under the service's usual NORMAL, a power loss
 *   right after the commit could forget it, and a sent transaction the database forgot could be
 *   signed and sent again. Needed whenever the chain is another system (RPC).
 * - `ordered`: a NORMAL commit. Enough when the chain commits its transactions to the same SQLite
 *   database after this write (the embedded chain): a WAL is replayed in order up to its first
 *   missing frame, so a power loss that forgets this record forgets the chain's later commit of the
 *   transaction too; the chain and the record never disagree.
 */
export type PendingDurability = 'full' | 'ordered';

/**
 * Persists the step's signed transactions before they are sent (docs/api.md). With `full` and a
 * `sync` (SQLite's WAL synced off the event loop) the record commits as usual and the step waits for
 * the sync; without one the connection is held for the three statements so no other write runs at
 * FULL or this one at NORMAL.
 */
export async function savePendingTx(
  db: Db,
  lease: LaunchLease,
  args: { step: string; pending: Record<string, unknown>; durability?: PendingDurability; sync?: (() => Promise<void>) | undefined },
): Promise<void> {
  const write = async (conn: DbOrTx) => (await pendingStatement.changed(conn, { ...lease, step: args.step, pending: JSON.stringify(args.pending) })) > 0;
  // PostgreSQL commits durably by default (synchronous_commit = on): an ordinary write.
  if (args.durability === 'ordered' || isPostgres(db)) {
    orThrow(lease, await write(db));
    return;
  }
  if (args.sync) {
    orThrow(lease, await write(db));
    await args.sync();
    return;
  }
  const held = await db.connection().execute(async (conn) => {
    await sql`pragma synchronous = FULL`.execute(conn);
    try {
      return await write(conn);
    } finally {
      await sql`pragma synchronous = NORMAL`.execute(conn);
    }
  });
  orThrow(lease, held);
}

const pendingStatement = compiledQuery<StepWrite<{ pending: string }>>((db: Db, p) =>
  db.updateTable('launch_steps').set({ pending_tx: p.pending }).where(stepUnderLease(db, p, p.step)),
);

/** Records the step's result and signatures; throws {@link LeaseLostError} without the lease. */
export async function completeStep(
  db: DbOrTx,
  lease: LaunchLease,
  args: { step: string; result: unknown; transactions: unknown; now: number },
): Promise<void> {
  const params = { ...lease, step: args.step, result: JSON.stringify(args.result), transactions: JSON.stringify(args.transactions), now: args.now };
  orThrow(lease, (await completeStatement.changed(db, params)) > 0);
}

const completeStatement = compiledQuery<StepWrite<{ result: string; transactions: string; now: number }>>((db: Db, p) =>
  db
    .updateTable('launch_steps')
    .set({ status: 'complete', result: p.result, transactions: p.transactions, error: null, completed_at: p.now, waiting_since: null, next_attempt_at: null })
    .where(stepUnderLease(db, p, p.step)),
);

/**
 * Records a transient step failure: the step waits (`status: 'waiting'`) with the last error until
 * `nextAttemptAt`; `waiting_since` keeps when the current wait began (set by the first failure of
 * the wait, kept by the later ones). Throws {@link LeaseLostError} without the lease.
 */
export async function waitStep(db: DbOrTx, lease: LaunchLease, args: { step: string; error: unknown; now: number; nextAttemptAt: number }): Promise<void> {
  const result = await db
    .updateTable('launch_steps')
    .set({ status: 'waiting', error: JSON.stringify(args.error), waiting_since: sql<number>`coalesce(waiting_since, ${args.now})`, next_attempt_at: args.nextAttemptAt })
    .where(stepUnderLease(db, lease, args.step))
    .executeTakeFirst();
  orThrow(lease, changed(result));
}

/** Marks the step failed. The `finalize` pseudo-step has no row; only real steps must match. */
export async function failStep(db: DbOrTx, lease: LaunchLease, args: { step: string; error: unknown; now: number }): Promise<void> {
  await db
    .updateTable('launch_steps')
    .set({ status: 'failed', error: JSON.stringify(args.error), completed_at: args.now, next_attempt_at: null })
    .where(stepUnderLease(db, lease, args.step))
    .execute();
}

type LeasedLaunchFields = Partial<Pick<LaunchRow, 'status' | 'results' | 'error' | 'started_at' | 'completed_at' | 'updated_at'>> & {
  lease_owner?: null;
  lease_expires_at?: null;
};

/** Updates the launch row while this runner holds its lease; throws {@link LeaseLostError} otherwise. */
export async function updateLeasedLaunchOrThrow(db: DbOrTx, lease: LaunchLease, set: LeasedLaunchFields): Promise<void> {
  orThrow(lease, await updateLeasedLaunch(db, lease, set));
}

/**
 * Updates the launch row under the lease and reserves the sequence numbers of `events` events in
 * the same statement; returns what {@link insertEvents} needs to record them. Throws
 * {@link LeaseLostError} without the lease.
 */
export async function updateLeasedLaunchForEvents(db: DbOrTx, lease: LaunchLease, set: LeasedLaunchFields, events: number): Promise<EventTarget> {
  const fields = Object.keys(set).sort() as Array<keyof LeasedLaunchFields>;
  const params: Record<string, unknown> = { ...lease, events };
  for (const field of fields) params[field] = set[field];
  const row = await launchEventsStatement.first(db, params, fields.join(','));
  if (!row) throw new LeaseLostError(lease.launchId);
  return { launchId: lease.launchId, webhookUrl: row.webhook_url, owner: row.owner, firstSequence: row.next_sequence - events, webhookSecretSealed: row.webhook_secret_enc };
}

/** The launch update of {@link updateLeasedLaunchForEvents}; its shape is the (sorted) fields it sets. */
const launchEventsStatement = compiledQuery<Record<string, unknown>, { next_sequence: number; webhook_url: string; owner: string; webhook_secret_enc: string }>((db: Db, p, shape) => {
  const fields = String(shape).split(',').filter((f) => f !== '');
  const lease = { launchId: p.launchId as string, owner: p.owner as string, token: p.token as number };
  return db
    .updateTable('launches')
    .set((eb) => ({ ...Object.fromEntries(fields.map((f) => [f, p[f]])), next_sequence: eb('next_sequence', '+', p.events as number) }))
    .where(holds(lease))
    .returning(['next_sequence', 'webhook_url', 'owner', 'webhook_secret_enc']);
});

/** Updates the launch row only while this runner holds its lease. */
export async function updateLeasedLaunch(db: DbOrTx, lease: LaunchLease, set: LeasedLaunchFields): Promise<boolean> {
  return changed(await db.updateTable('launches').set(set).where(holds(lease)).executeTakeFirst());
}
