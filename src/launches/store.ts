import { currentTraceparent } from '../lib/tracing.js';
import type { DbOrTx } from '../db/database.js';
import type { LaunchRow, LaunchStatus, StepRow } from '../db/schema.js';

/** Inserts a queued launch (or one awaiting its creator's signatures) and its pending steps. */
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
): Promise<void> {
  await trx
    .insertInto('launches')
    .values({
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
      trace_parent: currentTraceparent(),
    })
    .execute();
  if (args.steps.length === 0) return;
  await trx
    .insertInto('launch_steps')
    .values(
      args.steps.map((name, position) => ({
        launch_id: args.id,
        name,
        position,
        status: 'pending' as const,
        result: null,
        error: null,
        pending_tx: null,
        started_at: null,
        completed_at: null,
      })),
    )
    .execute();
}

/** A launch visible to this owner (any owner when `owner` is undefined: admin). */
export async function findLaunch(db: DbOrTx, id: string, owner: string | undefined): Promise<LaunchRow | undefined> {
  let query = db.selectFrom('launches').selectAll().where('id', '=', id);
  if (owner !== undefined) query = query.where('owner', '=', owner);
  return query.executeTakeFirst();
}

export async function findSteps(db: DbOrTx, launchId: string): Promise<StepRow[]> {
  return db.selectFrom('launch_steps').selectAll().where('launch_id', '=', launchId).orderBy('position', 'asc').execute();
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
