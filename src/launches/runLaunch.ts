import type { Logger } from 'pino';
import type { PendingTx, StepOutcome } from '../chain/steps/types.js';
import type { Db, Tx } from '../db/database.js';
import type { LaunchRow } from '../db/schema.js';
import type { Clock } from '../lib/clock.js';
import { parseJson } from '../lib/json.js';
import { recordEvent, type OutboxSignal } from '../webhooks/outbox.js';
import { classifyFailure } from './failure.js';
import { completionData, stepEvents } from './events.js';
import { completeStep, deferStep, savePendingTx, startStep, updateLeasedLaunchOrThrow, type LaunchLease, type PendingDurability } from './runStore.js';
import { findSteps } from './store.js';
import { failLaunch } from './failLaunch.js';
import type { StepRunner } from './stepPort.js';
import { asStepName } from './steps.js';

/** Finalization retries for this long after the last step, then the launch fails with `finalize_timeout`. */
export const DEFAULT_FINALIZE_TIMEOUT_MS = 15 * 60_000;

export type RunOutcome = { kind: 'complete'; mint: string | null } | { kind: 'failed'; step: string; code: string } | { kind: 'retry'; attempt: number } | { kind: 'paused' };

/** The collaborators a launch run needs. */
export interface LaunchRunDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  signal: OutboxSignal;
  runStep: StepRunner;
  /** Waits for the launch's transactions to be final before `launch.complete` (RPC: finalized). */
  finalize(signatures: string[]): Promise<void>;
  /** How long after its last step a launch may keep failing to finalize before it fails (default 15 min). */
  finalizeTimeoutMs?: number;
  /** Runs inside the transaction that completes the launch (the composition root creates its watches here). */
  onComplete?(trx: Tx, launchId: string, results: Record<string, unknown>, now: number): Promise<void>;
  /** How pending-transaction records reach the disk (default `full`; `ordered` when the chain commits to the same database). */
  pendingDurability?: PendingDurability;
}

interface RunArgs extends LaunchRunDeps {
  launch: LaunchRow;
  /** The fenced lease every write of this run names. */
  lease: LaunchLease;
  maxStepAttempts: number;
  shouldContinue(): boolean;
}

/** Runs the remaining steps of a leased launch; each state change commits with its event. */
export async function runLaunchSteps(args: RunArgs): Promise<RunOutcome> {
  const { db, clock, launch, lease } = args;
  const request = parseJson<Record<string, unknown>>(launch.request, {});
  const results = parseJson<Record<string, unknown>>(launch.results, {});

  if (launch.status === 'queued') {
    await db.transaction().execute(async (trx) => {
      await updateLeasedLaunchOrThrow(trx, lease, { status: 'processing', started_at: launch.started_at ?? clock.now(), updated_at: clock.now() });
      await recordEvent(trx, clock, { launchId: launch.id, event: 'launch.processing', requestId: launch.request_id, data: { status: 'processing' } });
    });
    args.signal.notify();
  }

  const steps = await findSteps(db, launch.id);
  for (const [index, step] of steps.entries()) {
    if (step.status === 'complete' || step.status === 'skipped') continue;
    if (!args.shouldContinue()) return { kind: 'paused' };
    const attempt = await startStep(db, lease, { step: step.name, now: clock.now() });
    const pending = parseJson<Record<string, PendingTx>>(step.pending_tx, {});
    const logger = args.logger.child({ step: step.name, attempt });
    let output: StepOutcome;
    try {
      output = await args.runStep({
        launchId: launch.id,
        step: asStepName(step.name),
        request,
        results: { ...results },
        pending,
        logger,
        async recordPending(label, tx) {
          pending[label] = tx;
          await savePendingTx(db, lease, { step: step.name, pending, durability: args.pendingDurability });
        },
      });
    } catch (error) {
      const failure = classifyFailure(error);
      logger.warn({ err: error, code: failure.code, retriable: failure.retriable }, 'step failed');
      if (failure.retriable && attempt < args.maxStepAttempts) {
        await deferStep(db, lease, { step: step.name, error: { code: failure.code, message: failure.message, attempt } });
        return { kind: 'retry', attempt };
      }
      await failLaunch(args, { step: step.name, code: failure.code, message: failure.message, results });
      return { kind: 'failed', step: step.name, code: failure.code };
    }
    Object.assign(results, output.result);
    await db.transaction().execute(async (trx) => {
      const now = clock.now();
      await completeStep(trx, lease, { step: step.name, result: output.result, transactions: output.transactions, now });
      await updateLeasedLaunchOrThrow(trx, lease, { results: JSON.stringify(results), updated_at: now });
      for (const event of stepEvents(step.name, index, steps.length, output)) {
        await recordEvent(trx, clock, { launchId: launch.id, event: event.event, requestId: launch.request_id, data: event.data });
      }
    });
    args.signal.notify();
  }

  const finalSteps = await findSteps(db, launch.id);
  const transactions = finalSteps.flatMap((s) => parseJson<StepOutcome['transactions']>(s.transactions, []));
  try {
    await args.finalize(transactions.map((t) => t.signature));
  } catch (error) {
    const failure = classifyFailure(error);
    // Bounded: a signature that never finalizes must not keep the launch processing forever.
    const stepsDoneAt = Math.max(0, ...finalSteps.map((s) => s.completed_at ?? 0));
    const overdue = clock.now() - stepsDoneAt >= (args.finalizeTimeoutMs ?? DEFAULT_FINALIZE_TIMEOUT_MS);
    if (failure.retriable && !overdue) return { kind: 'retry', attempt: launch.run_count };
    const message = overdue ? `transactions not finalized ${Math.round((clock.now() - stepsDoneAt) / 1000)} s after the last step; last error: ${failure.message}` : failure.message;
    const code = overdue ? 'finalize_timeout' : failure.code;
    await failLaunch(args, { step: 'finalize', code, message, results });
    return { kind: 'failed', step: 'finalize', code };
  }
  await db.transaction().execute(async (trx) => {
    const now = clock.now();
    await updateLeasedLaunchOrThrow(trx, lease, { status: 'complete', completed_at: now, updated_at: now, lease_owner: null, lease_expires_at: null });
    await recordEvent(trx, clock, { launchId: launch.id, event: 'launch.complete', requestId: launch.request_id, data: completionData(results, transactions) });
    await args.onComplete?.(trx, launch.id, results, now);
  });
  args.signal.notify();
  return { kind: 'complete', mint: typeof results.mint === 'string' ? results.mint : null };
}
