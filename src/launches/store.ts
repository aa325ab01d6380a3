import type { Insertable } from 'kysely';
import { compiledQuery } from '../db/compiledQuery.js';
import { currentTraceparent } from '../lib/tracing.js';
import type { DbOrTx } from '../db/database.js';
import type { LaunchesTable, LaunchRow, LaunchStatus, StepRow } from '../db/schema.js';

/**
 * Inserts a queued launch (or one awaiting its creator's signatures) and its pending steps; returns
 * the rows as written (`returning`), so the create's answer needs no read after its commit.
 */
export async function insertLaunch(
  trx: DbOrTx,
  args: {
    id: string;
    owner: string;
    request: string;
    webhookUrl: string;
    webhookSecretEnc: string;
    requestId: string;
    payer?: string | null;
    steps: string[];
    now: number;
    /** `awaiting_signatures` for a creator-signed launch (default `queued`). */
    status?: 'queued' | 'awaiting_signatures';
    /** When the runner looks at it first (a creator-signed launch: its signing deadline). */
    runAfter?: number;
  },
): Promise<{ launch: LaunchRow; steps: StepRow[] }> {
  const launch = await insertLaunchStatement.first(trx, {
    id: args.id,
    owner: args.owner,
    status: args.status ?? 'queued',
    request: args.request,
    webhook_url: args.webhookUrl,
    webhook_secret_enc: args.webhookSecretEnc,
    error: null,
    request_id: args.requestId,
    lease_owner: null,
    lease_expires_at: null,
    run_after: args.runAfter ?? args.now,
    created_at: args.now,
    updated_at: args.now,
    started_at: null,
    completed_at: null,
    payer: args.payer ?? null,
    trace_parent: currentTraceparent() ?? null,
  });
  if (!launch) throw new Error(`launch ${args.id}: its insert returned no row`);
  if (args.steps.length === 0) return { launch, steps: [] };
  const steps: Record<string, string> = { launchId: args.id };
  args.steps.forEach((name, position) => (steps[`name${position}`] = name));
  // `returning` promises no order on either database: the steps are sorted as findSteps reads them.
  const rows = await insertStepsStatement.rows(trx, steps, args.steps.length);
  return { launch, steps: rows.sort((a, b) => a.position - b.position) };
}

// The statements of every create and every run, compiled once (compiledQuery.ts).
const insertLaunchStatement = compiledQuery<Insertable<LaunchesTable>, LaunchRow>((db, p) =>
  db
    .insertInto('launches')
    .values({
      id: p.id,
      owner: p.owner,
      status: p.status,
      request: p.request,
      webhook_url: p.webhook_url,
      webhook_secret_enc: p.webhook_secret_enc,
      error: p.error,
      request_id: p.request_id,
      lease_owner: p.lease_owner,
      lease_expires_at: p.lease_expires_at,
      run_after: p.run_after,
      created_at: p.created_at,
      updated_at: p.updated_at,
      started_at: p.started_at,
      completed_at: p.completed_at,
      payer: p.payer,
      trace_parent: p.trace_parent,
    })
    .returningAll(),
);
/** A launch's pending steps; the shape is their count, each position a constant of the statement. */
const insertStepsStatement = compiledQuery<Record<string, string>, StepRow>((db, p, shape) =>
  db
    .insertInto('launch_steps')
    .values(
      Array.from({ length: Number(shape) }, (_, position) => ({
        launch_id: p.launchId!,
        name: p[`name${position}`]!,
        position,
        status: 'pending' as const,
        result: null,
        error: null,
        pending_tx: null,
        started_at: null,
        completed_at: null,
      })),
    )
    .returningAll(),
);
/** One launch by id; the shape `owner` adds the owner's condition. */
const findLaunchStatement = compiledQuery<{ id: string; owner?: string }, LaunchRow>((db, p, shape) => {
  const query = db.selectFrom('launches').selectAll().where('id', '=', p.id);
  return shape === 'owner' ? query.where('owner', '=', p.owner!) : query;
});
const findStepsStatement = compiledQuery<{ launchId: string }, StepRow>((db, p) =>
  db.selectFrom('launch_steps').selectAll().where('launch_id', '=', p.launchId).orderBy('position', 'asc'),
);

/** A launch visible to this owner (any owner when `owner` is undefined: admin). */
export async function findLaunch(db: DbOrTx, id: string, owner: string | undefined): Promise<LaunchRow | undefined> {
  return owner === undefined ? findLaunchStatement.first(db, { id }, 'any') : findLaunchStatement.first(db, { id, owner }, 'owner');
}

export async function findSteps(db: DbOrTx, launchId: string): Promise<StepRow[]> {
  return findStepsStatement.rows(db, { launchId });
}

/** One page of an owner's launches, newest first, with the total. */
export async function listLaunches(
  db: DbOrTx,
  args: { owner: string | undefined; status?: LaunchStatus; limit: number; offset: number },
): Promise<{ rows: LaunchRow[]; total: number }> {
  let base = db.selectFrom('launches');
  if (args.owner !== undefined) base = base.where('owner', '=', args.owner);
  if (args.status !== undefined) base = base.where('status', '=', args.status);
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(args.limit).offset(args.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

/** Steps of several launches at once, keyed by launch id. */
export async function findStepsOf(db: DbOrTx, launchIds: string[]): Promise<Map<string, StepRow[]>> {
  const byLaunch = new Map<string, StepRow[]>();
  if (launchIds.length === 0) return byLaunch;
  const rows = await db.selectFrom('launch_steps').selectAll().where('launch_id', 'in', launchIds).orderBy('position', 'asc').execute();
  for (const row of rows) {
    const list = byLaunch.get(row.launch_id) ?? [];
    list.push(row);
    byLaunch.set(row.launch_id, list);
  }
  return byLaunch;
}
