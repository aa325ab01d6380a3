import type { Logger } from 'pino';
import type { PendingTx, StepOutcome } from '../chain/steps/types.js';
import type { Db, DbOrTx, Tx } from '../db/database.js';
import type { LaunchRow } from '../db/schema.js';
import type { Clock } from '../lib/clock.js';
import { parseJson } from '../lib/json.js';
import { openSpan, within } from '../lib/tracing.js';
import { jitteredBackoffMs } from '../lib/retry.js';
import { insertEvents, newHandoff, type DeliveryHandoff, type EventToRecord, type OutboxSignal } from '../webhooks/outbox.js';
import { classifyFailure } from './failure.js';
import { completionData, stepEvents } from './events.js';
import { completeStep, LeaseLostError, savePendingTx, waitStep, startStep, updateLeasedLaunchForEvents, type LaunchLease, type PendingDurability } from './runStore.js';
import { findSteps } from './store.js';
import { failLaunch } from './failLaunch.js';
import { stepSpendsOf, type StepRunner } from './stepPort.js';
import { asStepName } from './steps.js';
import type { Funding } from '../funding/funding.js';

/** Finalization retries for this long after the last step, then the launch fails with `finalize_timeout`. */
export const DEFAULT_FINALIZE_TIMEOUT_MS = 15 * 60_000;

/** How long a step may wait on transient chain faults before the launch fails (LAUNCH_TRANSIENT_DEADLINE). */
export const DEFAULT_TRANSIENT_DEADLINE_MS = 60 * 60_000;

/** The delay before the next try after a transient failure of the `attempt`-th try (with the server's `Retry-After`, when known). */
export type TransientBackoff = (attempt: number, retryAfterMs?: number) => number;

/** `retry`: give the launch back until `runAfter` (a step waits, or finalization is not there yet). */
export type RunOutcome = { kind: 'complete'; mint: string | null } | { kind: 'failed'; step: string; code: string } | { kind: 'retry'; runAfter: number } | { kind: 'paused' };

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
  /**
   * The chain's confirmed transactions are final (the embedded chain): no finalization wait, and the
   * last step's completion and `launch.complete` commit in one transaction.
   */
  confirmedIsFinal?: boolean;
  /** How pending-transaction records reach the disk (default `full`; `ordered` when the chain commits to the same database). */
  pendingDurability?: PendingDurability;
  /** Makes what is committed durable without holding the event loop (SQLite: the WAL synced on the thread pool); used by `full`. */
  syncDurable?: () => Promise<void>;
  /** How long a step may wait on transient faults, from its first one, before the launch fails (default 1 h). */
  transientDeadlineMs?: number;
  /** Delay before the next try after a transient failure (default: capped, jittered, at least `Retry-After`). */
  backoff?: TransientBackoff;
  /** The owners' funding wallets (docs/funding.md): who pays, what each step spent, the release at the end. */
  funding?: Pick<Funding, 'payerFor' | 'recordSpends' | 'release'> | undefined;
  /**
   * Runs before a launch is failed, outside its transaction: a creator-signed launch's nonce rent
   * goes back (docs/signing.md). A throw leaves the launch unfailed, to be run again.
   */
  beforeFail?: ((launch: LaunchRow) => Promise<void>) | undefined;
}

interface RunArgs extends LaunchRunDeps {
  launch: LaunchRow;
  /** The fenced lease every write of this run names. */
  lease: LaunchLease;
  shouldContinue(): boolean;
}

/**
 * Runs the remaining steps of a leased launch; each state change commits with its events. A step's
 * completion, its events and the start of the next step commit together (one transaction per step),
 * and on a chain whose confirmed transactions are final the last step's completion carries
 * `launch.complete` too.
 */
export async function runLaunchSteps(args: RunArgs): Promise<RunOutcome> {
  // Tracing on: each run is a span under the request that created the launch (launches.trace_parent).
  const span = openSpan('launch.run', { parent: args.launch.trace_parent ?? null, attributes: { 'launch.id': args.launch.id, 'launch.run_count': args.launch.run_count } });
  if (!span) return runSteps(args);
  try {
    const outcome = await span.run(() => runSteps(args));
    span.setAttributes({ 'launch.outcome': outcome.kind });
    span.end();
    return outcome;
  } catch (error) {
    span.end(error);
    throw error;
  }
}

async function runSteps(args: RunArgs): Promise<RunOutcome> {
  const { db, clock, launch, lease } = args;
  const request = parseJson<Record<string, unknown>>(launch.request, {});
  const results = parseJson<Record<string, unknown>>(launch.results, {});
  const requestId = launch.request_id;
  const steps = await findSteps(db, launch.id);
  const todo = steps.map((step, index) => ({ step, index })).filter(({ step }) => step.status !== 'complete' && step.status !== 'skipped');
  // Every transaction of the launch and when its last step completed, kept as the steps commit.
  const transactions = new Map(steps.map((s) => [s.name, parseJson<StepOutcome['transactions']>(s.transactions, [])]));
  let stepsDoneAt = Math.max(0, ...steps.map((s) => s.completed_at ?? 0));
  const allTransactions = () => [...transactions.values()].flat();

  /** Starts the step at `todo[position]` under the lease (if any remains and the run may go on): its attempt number. */
  const startNext = async (conn: DbOrTx, position: number): Promise<number | undefined> => {
    const next = todo[position];
    if (!next || !args.shouldContinue()) return undefined;
    return startStep(conn, lease, { step: next.step.name, now: clock.now() });
  };

  if (launch.status === 'awaiting_signatures') {
    // Claimed at its signing deadline, still unsigned (docs/signing.md): nothing was sent for it.
    const message = `The creator did not sign every transaction of the launch by its signing deadline (SIGNING_DEADLINE); none of them was sent`;
    await failLaunch(args, { step: 'signing', code: 'signature_timeout', message, results, deadLetter: false });
    return { kind: 'failed', step: 'signing', code: 'signature_timeout' };
  }

  let attempt: number | undefined;
  if (launch.status === 'queued') {
    let handoff = newHandoff();
    await db.transaction().execute(async (trx) => {
      handoff = newHandoff();
      const target = await updateLeasedLaunchForEvents(trx, lease, { status: 'processing', started_at: launch.started_at ?? clock.now(), updated_at: clock.now() }, 1);
      await insertEvents(trx, clock, target, [{ event: 'launch.processing', requestId, data: { status: 'processing' } }], handoff);
      attempt = await startNext(trx, 0);
    });
    args.signal.notify(handoff);
  }

  for (const [position, { step, index }] of todo.entries()) {
    if (attempt === undefined) {
      if (!args.shouldContinue()) return { kind: 'paused' };
      attempt = await startStep(db, lease, { step: step.name, now: clock.now() });
    }
    const stepAttempt = attempt;
    attempt = undefined;
    const pending = parseJson<Record<string, PendingTx>>(step.pending_tx, {});
    const logger = args.logger.child({ step: step.name, attempt: stepAttempt });
    // Tracing on: a span per step (its chain transactions are spans under it, and its events link to it).
    const stepSpan = openSpan(`launch.step ${step.name}`, { attributes: { 'launch.id': launch.id, 'launch.step': step.name, 'launch.step.attempt': stepAttempt } });
    let output: StepOutcome;
    try {
      const paidBy = await args.funding?.payerFor(launch);
      output = await within(stepSpan, () => args.runStep({
        launchId: launch.id,
        step: asStepName(step.name),
        request,
        results: { ...results },
        pending,
        payerSeed: paidBy?.payerSeed,
        budgetLamports: paidBy?.budgetLamports,
        logger,
        async recordPending(label, tx) {
          pending[label] = tx;
          await savePendingTx(db, lease, { step: step.name, pending, durability: args.pendingDurability, sync: args.syncDurable });
        },
      }));
    } catch (error) {
      const failure = classifyFailure(error);
      // The fees of the step's transactions that landed and failed, before the step waits or the release closes the reservation.
      const spent = stepSpendsOf(error);
      if (spent.length > 0) await args.funding?.recordSpends(db, launch, spent);
      stepSpan?.setAttributes({ 'error.type': failure.code, 'launch.step.retriable': failure.retriable });
      stepSpan?.end(error);
      if (failure.retriable) {
        // A transient fault never fails the launch by itself: the step waits, until the deadline.
        const now = clock.now();
        const waitingSince = step.waiting_since ?? now;
        const deadline = waitingSince + (args.transientDeadlineMs ?? DEFAULT_TRANSIENT_DEADLINE_MS);
        if (now < deadline) {
          const delay = (args.backoff ?? defaultBackoff)(stepAttempt, failure.retryAfterMs);
          const nextAttemptAt = Math.min(now + delay, deadline);
          logger.warn({ err: error, code: failure.code, nextAttemptAt: new Date(nextAttemptAt).toISOString(), waitingSinceMs: now - waitingSince }, 'step waiting on a transient fault');
          await waitStep(db, lease, { step: step.name, error: { code: failure.code, message: failure.message, attempt: stepAttempt }, now, nextAttemptAt });
          return { kind: 'retry', runAfter: nextAttemptAt };
        }
        const message = `${failure.message} (still failing ${describeMs(now - waitingSince)} after the step's first transient failure, past LAUNCH_TRANSIENT_DEADLINE)`;
        logger.warn({ err: error, code: failure.code }, 'step failed: transient faults past the deadline');
        await failLaunch(args, { step: step.name, code: failure.code, message, results });
        return { kind: 'failed', step: step.name, code: failure.code };
      }
      logger.warn({ err: error, code: failure.code }, 'step failed');
      await failLaunch(args, { step: step.name, code: failure.code, message: failure.message, results });
      return { kind: 'failed', step: step.name, code: failure.code };
    }
    Object.assign(results, output.result);
    transactions.set(step.name, output.transactions);
    const last = position === todo.length - 1;
    const events: EventToRecord[] = stepEvents(step.name, index, steps.length, output).map((e) => ({ ...e, requestId }));
    let completed = false;
    let handoff = newHandoff();
    stepSpan?.setAttributes({ 'launch.step.signatures': output.transactions.map((t) => t.signature) });
    const saved = await saveStep(args, logger, () => within(stepSpan, () => db.transaction().execute(async (trx) => {
      handoff = newHandoff();
      completed = false;
      attempt = undefined;
      const now = clock.now();
      stepsDoneAt = now;
      await completeStep(trx, lease, { step: step.name, result: output.result, transactions: output.transactions, now });
      await args.funding?.recordSpends(trx, launch, output.spent ?? []);
      if (last && args.confirmedIsFinal) {
        await completeLaunch(trx, args, results, allTransactions(), now, events, handoff);
        completed = true;
        return;
      }
      const target = await updateLeasedLaunchForEvents(trx, lease, { results: JSON.stringify(results), updated_at: now }, events.length);
      await insertEvents(trx, clock, target, events, handoff);
      attempt = await startNext(trx, position + 1);
    }))).catch((error: unknown) => {
      stepSpan?.end(error);
      throw error;
    });
    if (saved !== true) {
      // The step's transactions are on chain and the database refuses its result (not a lost
      // lease, not an outage: the failure below could commit). The launch fails with what it has;
      // retrying its dead letter resumes this step from its recorded transactions, sending nothing again.
      stepSpan?.end(saved.error);
      const signatures = output.transactions.map((t) => t.signature).join(', ');
      const message = `The step's transactions landed (${signatures || 'none'}) but saving its result failed ${SAVE_TRIES} times: ${saved.message}. Retrying the launch resumes this step from its recorded transactions without sending them again`;
      await failWithSpends(args, logger, { step: step.name, code: 'result_not_saved', message, results }, output.spent ?? []);
      return { kind: 'failed', step: step.name, code: 'result_not_saved' };
    }
    stepSpan?.end();
    args.signal.notify(handoff);
    if (completed) return { kind: 'complete', mint: mintOf(results) };
  }

  try {
    if (!args.confirmedIsFinal) await args.finalize(allTransactions().map((t) => t.signature));
  } catch (error) {
    const failure = classifyFailure(error);
    // Bounded: a signature that never finalizes must not keep the launch processing forever.
    const overdue = clock.now() - stepsDoneAt >= (args.finalizeTimeoutMs ?? DEFAULT_FINALIZE_TIMEOUT_MS);
    if (failure.retriable && !overdue) return { kind: 'retry', runAfter: clock.now() + (args.backoff ?? defaultBackoff)(launch.run_count, failure.retryAfterMs) };
    const message = overdue ? `transactions not finalized ${Math.round((clock.now() - stepsDoneAt) / 1000)} s after the last step; last error: ${failure.message}` : failure.message;
    const code = overdue ? 'finalize_timeout' : failure.code;
    await failLaunch(args, { step: 'finalize', code, message, results });
    return { kind: 'failed', step: 'finalize', code };
  }
  let handoff = newHandoff();
  await db.transaction().execute(async (trx) => {
    handoff = newHandoff();
    await completeLaunch(trx, args, results, allTransactions(), clock.now(), [], handoff);
  });
  args.signal.notify(handoff);
  return { kind: 'complete', mint: mintOf(results) };
}

/** Tries of a step's result save before the launch fails with `result_not_saved`, and the pauses between them. */
const SAVE_TRIES = 3;
const SAVE_RETRY_MS = [100, 1000];

/**
 * Commits a step's result, trying again after an unexpected database error: true once it committed,
 * else the last error. A lost lease is not retried (another runner owns the launch): it throws.
 */
async function saveStep(args: RunArgs, logger: Logger, save: () => Promise<void>): Promise<true | { error: unknown; message: string }> {
  for (let tried = 1; ; tried++) {
    try {
      await save();
      return true;
    } catch (error) {
      if (error instanceof LeaseLostError || !args.shouldContinue()) throw error;
      const message = error instanceof Error ? error.message : String(error);
      logger.error({ err: error, tried }, 'saving the step result failed');
      if (tried >= SAVE_TRIES) return { error, message };
      await new Promise((resolve) => setTimeout(resolve, SAVE_RETRY_MS[tried - 1] ?? 1000));
    }
  }
}

/**
 * Fails the launch after its step's result could not be saved, recording what the step's
 * transactions spent in the same transaction; when the ledger refuses those entries too, fails it
 * without them (the failure must commit). Throws when the database takes neither: the runner then
 * releases the launch and a later run resumes the step from its recorded transactions.
 */
async function failWithSpends(args: RunArgs, logger: Logger, failure: { step: string; code: string; message: string; results: Record<string, unknown> }, spent: ReadonlyArray<{ signature: string; lamports: bigint }>): Promise<void> {
  if (spent.length > 0 && args.funding) {
    try {
      await failLaunch(args, { ...failure, spent });
      return;
    } catch (error) {
      if (error instanceof LeaseLostError) throw error;
      logger.error({ err: error, spent }, 'the failure with the step spends did not commit; failing the launch without them');
    }
  }
  await failLaunch(args, failure);
}

const defaultBackoff: TransientBackoff = (attempt, retryAfterMs) => jitteredBackoffMs(attempt, { retryAfterMs });

/** `90 s`, `12 min`, `1.5 h`: a wait as people read it. */
function describeMs(ms: number): string {
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 2 * 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** A bonding-curve launch: the service pays its graduation later, out of the launch's reservation. */
const awaitsGraduation = (results: Record<string, unknown>): boolean => (results.pool as { kind?: unknown } | undefined)?.kind === 'bonding-curve';

const mintOf = (results: Record<string, unknown>): string | null => (typeof results.mint === 'string' ? results.mint : null);

/** Completes the launch under its lease with `launch.complete` after `before` (the last step's events, when they commit together). */
async function completeLaunch(trx: Tx, args: RunArgs, results: Record<string, unknown>, transactions: StepOutcome['transactions'], now: number, before: EventToRecord[], handoff: DeliveryHandoff): Promise<void> {
  const { launch, lease } = args;
  const events = [...before, { event: 'launch.complete', requestId: launch.request_id, data: completionData(results, transactions) }];
  const target = await updateLeasedLaunchForEvents(
    trx,
    lease,
    { status: 'complete', results: JSON.stringify(results), completed_at: now, updated_at: now, lease_owner: null, lease_expires_at: null },
    events.length,
  );
  await insertEvents(trx, args.clock, target, events, handoff);
  // A bonding curve's graduation is still to be paid (docs/funding.md): its reservation stays open, the graduation's commit releases it.
  if (!awaitsGraduation(results)) await args.funding?.release(trx, launch.id);
  await args.onComplete?.(trx, launch.id, results, now);
}
