import type { Db, DbOrTx } from '../../db/database.js';
import { isPostgres, leaseDeadline, leaseNow } from '../../db/dialect.js';
import type { PendingTx } from '../../chain/steps/types.js';
import { parseJson } from '../../lib/json.js';

/**
 * The durable record of a bonding curve's graduation (docs/programs.md, "Graduation"): one row per
 * bonding-curve launch (`curve_migrations`, migration 044), made in the transaction that completes
 * the launch. `waiting` until the chain watcher sees the curve full and marks it `due` in its fenced
 * commit; then the graduation job claims it with a lease and a fencing token, records the signed
 * transaction before sending it, and marks it `done` with the event and the ledger entry.
 */
export type MigrationRow = {
  launch_id: string;
  owner: string;
  pool: string;
  threshold_lamports: string;
  state: 'waiting' | 'due' | 'done';
  due_at: number | null;
  next_attempt_at: number | null;
  attempts: number;
  last_error: string | null;
  pending: string | null;
  signature: string | null;
  amm_pool: string | null;
  result: string | null;
  lease_owner: string | null;
  lease_expires_at: number | null;
  fence: number;
  graduated_at: number | null;
  created_at: number;
  updated_at: number;
};

type Tables = { curve_migrations: MigrationRow };
const tables = (db: DbOrTx) => (db as Db).withTables<Tables>();

/** Thrown when the job's lease was taken over (its fencing token moved on): nothing was written. */
export class MigrationFencedError extends Error {
  constructor(launchId: string) {
    super(`the graduation of ${launchId} was claimed by another instance; nothing written`);
    this.name = 'MigrationFencedError';
  }
}

/** The launch's graduation record, made with its completion (a curve launch only); a second insert is a no-op. */
export async function insertCurveMigration(trx: DbOrTx, args: { launchId: string; owner: string; pool: string; thresholdLamports: string; now: number }): Promise<void> {
  await tables(trx)
    .insertInto('curve_migrations')
    .values({
      launch_id: args.launchId,
      owner: args.owner,
      pool: args.pool,
      threshold_lamports: args.thresholdLamports,
      state: 'waiting',
      due_at: null,
      next_attempt_at: null,
      attempts: 0,
      last_error: null,
      pending: null,
      signature: null,
      amm_pool: null,
      result: null,
      lease_owner: null,
      lease_expires_at: null,
      fence: 0,
      graduated_at: null,
      created_at: args.now,
      updated_at: args.now,
    })
    .onConflict((oc) => oc.column('launch_id').doNothing())
    .execute();
}

/** The watcher saw the curve full: the graduation becomes due now (once; a row already due or done is left as it is). */
export async function markMigrationDue(trx: DbOrTx, launchId: string, now: number): Promise<boolean> {
  const updated = await tables(trx)
    .updateTable('curve_migrations')
    .set({ state: 'due', due_at: now, next_attempt_at: now, updated_at: now })
    .where('launch_id', '=', launchId)
    .where('state', '=', 'waiting')
    .executeTakeFirst();
  return Number(updated.numUpdatedRows) > 0;
}

/**
 * Claims due graduations with a lease; each claim bumps the fencing token, so a write by an instance
 * whose lease expired and was claimed again is refused. PostgreSQL: `FOR UPDATE SKIP LOCKED` and the
 * database clock for leases, as the launch runner and the watcher do.
 */
export async function claimDueMigrations(db: Db, args: { owner: string; now: number; leaseMs: number; limit: number }): Promise<MigrationRow[]> {
  return db.transaction().execute(async (trx) => {
    const due = await tables(trx)
      .selectFrom('curve_migrations')
      .select('launch_id')
      .where('state', '=', 'due')
      .where('next_attempt_at', '<=', args.now)
      .where((w) => w.or([w('lease_owner', 'is', null), w('lease_expires_at', '<', leaseNow(trx, args.now))]))
      .orderBy('next_attempt_at')
      .limit(args.limit)
      .$if(isPostgres(trx), (q) => q.forUpdate().skipLocked())
      .execute();
    if (due.length === 0) return [];
    return tables(trx)
      .updateTable('curve_migrations')
      .set((eb) => ({ lease_owner: args.owner, lease_expires_at: leaseDeadline(trx, args.now, args.leaseMs), fence: eb('fence', '+', 1), attempts: eb('attempts', '+', 1), updated_at: args.now }))
      .where('launch_id', 'in', due.map((d) => d.launch_id))
      .returningAll()
      .execute();
  });
}

/**
 * Records the graduation's signed transactions before each is sent (by label: `migration_damm_v2`,
 * and with locked vesting `create_locker` and `locker_recipient` first), under the fence (a job
 * whose lease was lost sends nothing).
 */
export async function recordMigrationPending(db: DbOrTx, row: MigrationRow, pending: Record<string, PendingTx>, now: number): Promise<void> {
  const updated = await tables(db)
    .updateTable('curve_migrations')
    .set({ pending: JSON.stringify(pending), updated_at: now })
    .where('launch_id', '=', row.launch_id)
    .where('fence', '=', row.fence)
    .executeTakeFirst();
  if (Number(updated.numUpdatedRows) === 0) throw new MigrationFencedError(row.launch_id);
}

/** The recorded transactions of a claimed row, by label. */
export function pendingOf(row: MigrationRow): Record<string, PendingTx> {
  const parsed = row.pending ? parseJson<Record<string, unknown> | undefined>(row.pending, undefined) : undefined;
  if (!parsed) return {};
  // A lone transaction (the first landing's format) is the migration's.
  return typeof parsed.signature === 'string' ? { migration_damm_v2: parsed as unknown as PendingTx } : (parsed as Record<string, PendingTx>);
}

/** In the completing transaction, under the fence: the row is `done` with its pool and signature. Throws when the lease was lost. */
export async function completeMigration(trx: DbOrTx, row: MigrationRow, done: { signature: string; ammPool: string; result: Record<string, unknown>; now: number }): Promise<void> {
  const updated = await tables(trx)
    .updateTable('curve_migrations')
    .set({ state: 'done', signature: done.signature, amm_pool: done.ammPool, result: JSON.stringify(done.result), graduated_at: done.now, lease_owner: null, lease_expires_at: null, next_attempt_at: null, last_error: null, updated_at: done.now })
    .where('launch_id', '=', row.launch_id)
    .where('fence', '=', row.fence)
    .where('state', '=', 'due')
    .executeTakeFirst();
  if (Number(updated.numUpdatedRows) === 0) throw new MigrationFencedError(row.launch_id);
}

/** Gives a claimed row back for a later attempt (the curve not ready yet, the wallet short, the chain down). */
export async function retryMigrationLater(db: DbOrTx, row: MigrationRow, args: { at: number; error: string | null; now: number }): Promise<void> {
  await tables(db)
    .updateTable('curve_migrations')
    .set({ lease_owner: null, lease_expires_at: null, next_attempt_at: args.at, last_error: args.error === null ? null : args.error.slice(0, 1000), updated_at: args.now })
    .where('launch_id', '=', row.launch_id)
    .where('fence', '=', row.fence)
    .execute();
}

/** The API view of a launch's graduation (`GET /api/launches/{id}`'s `graduation`), or null for a launch without one. */
export async function presentMigration(db: DbOrTx, launchId: string): Promise<Record<string, unknown> | null> {
  const row = await tables(db).selectFrom('curve_migrations').selectAll().where('launch_id', '=', launchId).executeTakeFirst();
  if (!row) return null;
  const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());
  return {
    state: row.state,
    pool: row.pool,
    thresholdLamports: row.threshold_lamports,
    dueAt: iso(row.due_at),
    graduatedAt: iso(row.graduated_at),
    ammPool: row.amm_pool,
    positions: row.result ? (parseJson<{ positions?: unknown[] }>(row.result, {}).positions ?? []) : [],
    signature: row.signature,
    attempts: Number(row.attempts),
    lastError: row.state === 'done' ? null : row.last_error,
  };
}
